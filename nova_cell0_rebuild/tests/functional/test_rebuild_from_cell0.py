# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Rebuilding a server buried in cell0, on real Nova."""

import base64

from nova import context as nova_context
from nova import crypto
from nova import objects as nova_objects
from nova.tests import fixtures as nova_fixtures
from nova import utils

from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests import microversions as mv

CELL0 = '00000000-0000-0000-0000-000000000000'
MARKER = 'created_with_personality_files'

# What a server looks like in the API, minus what a build changes.
_BUILD_FIELDS = {
    'status', 'OS-EXT-STS:vm_state', 'OS-EXT-STS:task_state',
    'OS-EXT-STS:power_state', 'OS-SRV-USG:launched_at', 'updated',
    'hostId', 'OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname',
    'OS-EXT-SRV-ATTR:instance_name', 'addresses', 'fault', 'host_status',
    'progress',
    # Set from the host on a build ('' while in cell0), as for any create;
    # the requested zone is kept in the RequestSpec, compared below.
    'OS-EXT-AZ:availability_zone',
    # Chosen by compute on a build.
    'OS-EXT-SRV-ATTR:root_device_name',
    # Nova shows security groups only for an instance built in a cell; the
    # requested ones are kept in the RequestSpec, compared below.
    'security_groups',
}


class RebuildFromCell0Test(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.keypair = self.api.post_keypair({'keypair': {
            'name': 'kp1', 'public_key': crypto.generate_key_pair()[1]}})
        self.group = self.api.post_server_groups(
            {'name': 'g1', 'policy': 'anti-affinity'})
        self.port_id = self.neutron.port_1['id']

    def _create_buried(self, **extra):
        server = self._build_server(
            name='srv1', image_uuid=self.image_id,
            networks=[{'port': self.port_id}])
        server.update({
            'metadata': {'k1': 'v1', 'k2': 'v2'},
            'tags': ['t1', 't2'],
            'key_name': 'kp1',
            'user_data': base64.b64encode(b'#!/bin/true').decode(),
            'description': 'a server that failed to schedule',
            'hostname': 'my-host-name',
            'config_drive': True,
            'block_device_mapping_v2': [{
                'boot_index': 0, 'uuid': self.image_id,
                'source_type': 'image', 'destination_type': 'local'}],
        })
        server.update(extra)
        created = self.api.post_server({
            'server': server,
            'os:scheduler_hints': {'group': self.group['id']}})
        return self._wait_for_state_change(created, 'ERROR')

    def _snapshot(self, server_id):
        """Everything design section 4 says a rebuild must keep."""
        view = self.admin_api.get_server(server_id)
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            self.admin_context, server_id)
        with nova_context.target_cell(self.admin_context,
                                      mapping.cell_mapping) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=[
                    'system_metadata', 'metadata', 'flavor', 'keypairs',
                    'trusted_certs', 'tags'])
            bdms = nova_objects.BlockDeviceMappingList.get_by_instance_uuid(
                cctxt, server_id)
        spec = nova_objects.RequestSpec.get_by_instance_uuid(
            self.admin_context, server_id)
        group = nova_objects.InstanceGroup.get_by_uuid(
            self.admin_context, self.group['id'])
        return {
            'view': {k: v for k, v in view.items() if k not in _BUILD_FIELDS},
            'reservation_id': instance.reservation_id,
            'launch_index': instance.launch_index,
            'created_at': instance.created_at,
            'user_data': instance.user_data,
            'config_drive': instance.config_drive,
            'hostname': instance.hostname,
            'key_data': instance.key_data,
            'keypairs': [kp.name for kp in instance.keypairs],
            'flavor': instance.flavor.flavorid,
            'requested_availability_zone': spec.availability_zone,
            'metadata': instance.metadata,
            # Compute adds boot_roles on a build; the rest is the user's.
            'system_metadata': {k: v for k, v in
                                instance.system_metadata.items()
                                if k != 'boot_roles'},
            'tags': sorted(t.tag for t in instance.tags),
            'bdms': sorted((b.uuid, b.source_type, b.destination_type,
                            b.boot_index, b.image_id, b.volume_id)
                           for b in bdms),
            'scheduler_hints': spec.scheduler_hints,
            'security_groups': [sg.name for sg in spec.security_groups],
            'group_members': group.members,
            'project_user': (instance.project_id, instance.user_id),
        }

    def test_buried_then_capacity_then_rebuild_goes_active(self):
        server = self._create_buried()
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        before = self._snapshot(server['id'])
        self.assertIn('No valid host', server['fault']['message'])
        # Everything the burial wrote in cell0 must go with the move.
        self.assertLessEqual(
            {'instances', 'instance_extra', 'instance_info_caches',
             'instance_metadata', 'instance_system_metadata',
             'instance_faults', 'block_device_mapping', 'tags',
             'instance_actions'}, set(self._cell0_rows(server['id'])))

        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual(server['id'], resp.body['server']['id'])
        self.assertEqual('BUILD', resp.body['server']['status'])
        # [api] enable_instance_password is on by default: Nova shows it.
        self.assertTrue(resp.body['server']['adminPass'])

        active = self._wait_for_state_change(resp.body['server'], 'ACTIVE')
        self.assertEqual(server['id'], active['id'])
        self.assertEqual('host1', self.admin_api.get_server(
            server['id'])['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(self.cell_mappings['cell1'].uuid,
                         self._mapped_cell_uuid(server['id']))
        self.assertEqual({}, self._cell0_rows(server['id']))

        after = self._snapshot(server['id'])
        for key in before:
            self.assertEqual(before[key], after[key], key)
        # The requested port is the one attached.
        port = self.neutron.show_port(self.port_id)['port']
        self.assertEqual(server['id'], port['device_id'])
        self.assertEqual('host1', port['binding:host_id'])


class RebuildScenariosTest(base.Cell0RebuildTestCase):
    """The rebuild paths a user meets, on real Nova."""

    def _invalid_state_409(self, server_id):
        return {'conflictingRequest': {
            'code': 409,
            'message': "Instance %s is in an invalid state for 'rebuild'"
                       % server_id}}

    def _assert_untouched(self, server, cell0_rows):
        now = self.admin_api.get_server(server['id'])
        self.assertEqual('ERROR', now['status'])
        self.assertEqual(server['updated'], now['updated'])
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        self.assertEqual(cell0_rows, self._cell0_rows(server['id']))

    def test_below_threshold_nova_refuses_and_nothing_changes(self):
        # Nova's 409, its message followed by the microversion hint
        # (test_microversion_hint has the hint's cases).
        server = self._create_buried_server()
        rows = self._cell0_rows(server['id'])
        self._start_compute('host1')
        nova_refusal = self._invalid_state_409(server['id'])
        for version in (mv.BELOW_NOVA_MAX, '2.56'):
            resp = self._rebuild(server['id'], microversion=version)
            self.assertEqual(409, resp.status)
            message = resp.body['conflictingRequest']['message']
            self.assertTrue(message.startswith(
                nova_refusal['conflictingRequest']['message'] + ' '),
                message)
            self.assertIn('at compute API microversion %s or later'
                          % mv.NOVA_MAX, message)
        self._assert_untouched(server, rows)

    def test_created_with_personality_files_is_refused(self):
        personality = [{'path': '/etc/motd', 'contents': base64.b64encode(
            b'hello').decode()}]
        server = self._create_buried_server(
            microversion='2.1', personality=personality,
            networks=[{'uuid': self.neutron.network_1['id']}])
        # Nothing runs after Nova's answer: no marker yet, and none can
        # land while the rows are counted.
        self.assertNotIn(MARKER, self._cell0_instance(
            server['id']).system_metadata)
        rows = self._cell0_rows(server['id'])
        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(409, resp.status)
        message = resp.body['conflictingRequest']['message']
        self.assertIn('created with personality files', message)
        self.assertIn("created in a way that cannot support this request",
                      message)
        self.assertIn('Delete it and create it again', message)
        # The refusal wrote the marker (one system_metadata row) and
        # nothing else.
        marked = dict(rows, instance_system_metadata=rows[
            'instance_system_metadata'] + 1)
        self._assert_untouched(server, marked)
        self.assertEqual('True', self._cell0_instance(
            server['id']).system_metadata[MARKER])
        # Refused again; the marker is not written twice.
        self.assertEqual(409, self._rebuild(server['id']).status)
        self._assert_untouched(server, marked)

    def test_boot_from_volume(self):
        volume = nova_fixtures.CinderFixture.IMAGE_BACKED_VOL
        server = self._create_buried_server(
            imageRef='', block_device_mapping_v2=[{
                'boot_index': 0, 'uuid': volume, 'source_type': 'volume',
                'destination_type': 'volume'}])
        self._start_compute('host1')
        # Only the image in the volume can be asked for.
        resp = self._rebuild(server['id'],
                             {'imageRef': self.glance.image2['id']})
        self.assertEqual(400, resp.status)
        self.assertIn('volume-backed',
                      resp.body['badRequest']['message'])
        resp = self._rebuild(server['id'], {'imageRef': self.image_id})
        self.assertEqual(202, resp.status, resp.body)
        # The answer shows the volumes as Nova shows a building server's.
        self.assertEqual(
            self.admin_api.get_server(
                server['id'])['os-extended-volumes:volumes_attached'],
            resp.body['server']['os-extended-volumes:volumes_attached'])
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(
            [volume], [v['id'] for v in
                       active['os-extended-volumes:volumes_attached']])
        self.assertEqual('', active['image'])

    def test_rebuild_with_a_new_image(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        new_image = self.glance.image2['id']
        resp = self._rebuild(server['id'], {'imageRef': new_image})
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual(new_image, resp.body['server']['image']['id'])
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(new_image, active['image']['id'])
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            self.admin_context, server['id'])
        with nova_context.target_cell(self.admin_context,
                                      mapping.cell_mapping) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(
                cctxt, server['id'], expected_attrs=['system_metadata'])
            bdms = nova_objects.BlockDeviceMappingList.get_by_instance_uuid(
                cctxt, server['id'])
        self.assertEqual(new_image,
                         instance.system_metadata['image_base_image_ref'])
        self.assertEqual([new_image], [b.image_id for b in bdms
                                       if b.boot_index == 0])

    def test_rebuild_changes_what_the_body_asks(self):
        server = self._create_buried_server()
        self.api.post_keypair({'keypair': {
            'name': 'kp2', 'public_key': crypto.generate_key_pair()[1]}})
        self._start_compute('host1')
        user_data = base64.b64encode(b'new user data').decode()
        resp = self._rebuild(server['id'], {
            'imageRef': self.image_id, 'name': 'renamed',
            'metadata': {'new': 'meta'}, 'key_name': 'kp2',
            'user_data': user_data, 'description': 'described',
            'hostname': 'new-hostname'})
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual('renamed', resp.body['server']['name'])
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('renamed', active['name'])
        self.assertEqual({'new': 'meta'}, active['metadata'])
        self.assertEqual('kp2', active['key_name'])
        self.assertEqual(user_data, active['OS-EXT-SRV-ATTR:user_data'])
        self.assertEqual('described', active['description'])
        self.assertEqual('new-hostname', active['OS-EXT-SRV-ATTR:hostname'])

    def test_still_no_capacity_buries_again_then_rebuilds(self):
        server = self._create_buried_server()
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        again = self._wait_for_state_change(resp.body['server'], 'ERROR')
        self.assertEqual(server['id'], again['id'])
        self.assertIn('No valid host', again['fault']['message'])
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        self.assertEqual(server['created'], again['created'])

        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(server['id'], active['id'])
        self.assertEqual({}, self._cell0_rows(server['id']))

    def test_multi_create_siblings_each_rebuilt(self):
        first = self._create_buried_server(min_count=3, max_count=3,
                                           name='sib')
        siblings = self.api.get_servers(search_opts={
            'reservation_id': first['OS-EXT-SRV-ATTR:reservation_id']})
        self.assertEqual(3, len(siblings))
        for sibling in siblings:
            self._wait_for_state_change(sibling, 'ERROR')
        self._start_compute('host1')
        for sibling in siblings:
            resp = self._rebuild(sibling['id'])
            self.assertEqual(202, resp.status, resp.body)
        for sibling in siblings:
            active = self._wait_for_state_change(sibling, 'ACTIVE')
            self.assertEqual(sibling['id'], active['id'])
        self.assertEqual(
            sorted(s['id'] for s in siblings),
            sorted(s['id'] for s in self.api.get_servers(search_opts={
                'reservation_id': first['OS-EXT-SRV-ATTR:reservation_id']})))


class ReaperRebuildTest(base.Cell0RebuildTestCase):
    """Aardvark sends only imageRef, at microversion 2.65."""

    cell0_rebuild_conf = {'min_microversion': '2.65'}

    def test_reaper_request(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        resp = self._rebuild(server['id'], microversion='2.64')
        self.assertEqual(409, resp.status)
        resp = self._rebuild(server['id'], {'imageRef': self.image_id},
                             microversion='2.65')
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual('2.65', resp.headers['x-openstack-nova-api-version'])
        self._wait_for_state_change(server, 'ACTIVE')


class RequestedHostTest(base.Cell0RebuildTestCase):
    """A create's 2.74 host, which Nova does not keep, is honoured."""

    def test_requested_host_is_kept(self):
        self._start_compute('host1')
        self._start_compute('host2')
        # host1 now has less free RAM: left to itself, the scheduler's
        # RAM weigher prefers host2.
        filler = self._build_server(image_uuid=self.image_id,
                                    networks='none')
        filler['host'] = 'host1'
        with utils.temporary_mutation(self.admin_api, microversion='2.74'):
            filler = self.admin_api.post_server({'server': filler})
        self._wait_for_state_change(filler, 'ACTIVE')
        self._set_capacity(False, 'host1')
        server = self._create_buried_server(
            microversion='2.74', api=self.admin_api, host='host1')
        self.assertIn('No valid host', server['fault']['message'])
        self._set_capacity(True, 'host1')
        resp = self._rebuild(server['id'], api=self.admin_api)
        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('host1', active['OS-EXT-SRV-ATTR:host'])
