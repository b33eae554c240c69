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

"""Smaller losses: what a rebuild from cell0 must keep or answer right.

A forced host kept, access addresses kept, an unmigrated mapping moved,
and the loser of two concurrent rebuilds told that another rebuild is in
progress.
"""

import fixtures
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova.tests.functional.api import client as api_client
from oslo_utils import importutils

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.tests.functional import base

CELL0_ROWS = 'nova_cell0_rebuild.adapters.nova_cell0_rows.'
COMPUTE = 'nova_cell0_rebuild.adapters.nova_compute.'


class ForcedHostTest(base.Cell0RebuildTestCase):
    """An admin's ``az:host:node`` forced host survives the rebuild."""

    def _spec(self, server_id):
        return nova_objects.RequestSpec.get_by_instance_uuid(
            self.admin_context, server_id)

    def test_forced_host_and_node_are_kept(self):
        server = self._create_buried_server(
            api=self.admin_api, availability_zone='nova:hostX:hostX')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(['hostX'], self._spec(server['id']).force_hosts)
        self._start_compute('hostX')
        self._start_compute('host2')
        # hostX now has less free RAM: left to itself, the scheduler's RAM
        # weigher prefers host2.
        filler = self._build_server(image_uuid=self.image_id,
                                    networks='none', az='nova:hostX')
        filler = self.admin_api.post_server({'server': filler})
        filler = self._wait_for_state_change(filler, 'ACTIVE')
        self.assertEqual('hostX', filler['OS-EXT-SRV-ATTR:host'])

        resp = self._rebuild(server['id'], api=self.admin_api)
        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('hostX', active['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('hostX',
                         active['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        spec = self._spec(server['id'])
        self.assertEqual(['hostX'], spec.force_hosts)
        self.assertEqual(['hostX'], spec.force_nodes)
        self.assertEqual('nova', spec.availability_zone)


class AccessAddressesTest(base.Cell0RebuildTestCase):
    """A server created with access addresses is rebuilt with them.

    The move compares the cell0 row with what it copied in the DELETE of
    the row; Nova's instance holds the addresses as netaddr objects, which
    its column type does not take as a value to compare with.
    """

    def test_access_addresses_are_kept(self):
        server = self._create_buried_server(
            accessIPv4='192.0.2.10', accessIPv6='2001:DB8:0:0::10')
        self._start_compute('host1')

        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('192.0.2.10', active['accessIPv4'])
        self.assertEqual('2001:db8::10', active['accessIPv6'])

    def test_access_addresses_the_rebuild_sets_are_kept(self):
        server = self._create_buried_server(accessIPv6='2001:db8::10')
        self._start_compute('host1')

        resp = self._rebuild(server['id'], body={
            'imageRef': self.image_id, 'accessIPv4': '192.0.2.11',
            'accessIPv6': '2001:db8::11'})
        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('192.0.2.11', active['accessIPv4'])
        self.assertEqual('2001:db8::11', active['accessIPv6'])


class UnmigratedMappingTest(base.Cell0RebuildTestCase):
    """A mapping whose queued_for_delete is NULL is "not queued", as in Nova.

    Mappings written before Nova's ``queued_for_delete`` online data
    migration ran keep NULL there until ``nova-manage db
    online_data_migrations``; Nova's own queries read NULL as False.
    """

    def _unmigrate(self, server_id):
        with api_db_api.context_manager.writer.using(self.admin_context) as (
                session):
            updated = session.query(api_models.InstanceMapping).filter_by(
                instance_uuid=server_id).update(
                    {'queued_for_delete': None}, synchronize_session=False)
        self.assertEqual(1, updated)

    def _queued_for_delete_column(self, server_id):
        with api_db_api.context_manager.reader.using(self.admin_context) as (
                session):
            return session.query(
                api_models.InstanceMapping.queued_for_delete).filter_by(
                    instance_uuid=server_id).scalar()

    def test_unmigrated_mapping_is_rebuilt(self):
        server = self._create_buried_server()
        self._unmigrate(server['id'])
        self.assertIsNone(self._queued_for_delete_column(server['id']))
        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        mapping = nova_servers.get_mapping(self.admin_context, server['id'])
        self.assertEqual('cell1', mapping.cell_mapping.name)

    def test_unmigrated_mapping_is_put_back_on_failure(self):
        server = self._create_buried_server()
        self._unmigrate(server['id'])
        # Fails after the mapping pointed at no cell, with the cell0 rows
        # still there: the undo maps the server back to cell0.
        with fixtures.MockPatch(CELL0_ROWS + 'destroy_cell0_instance',
                                side_effect=RuntimeError('Injected')):
            resp = self._rebuild(server['id'])
        self.assertEqual(500, resp.status, resp.body)
        mapping = nova_servers.get_mapping(self.admin_context, server['id'])
        self.assertTrue(nova_servers.is_cell0(mapping.cell_mapping))
        self.assertRaises(
            nova_exception.BuildRequestNotFound,
            nova_objects.BuildRequest.get_by_instance_uuid,
            self.admin_context, server['id'])
        self.assertIsNone(self._cell0_instance(server['id']).task_state)

        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')


class ConcurrentRebuildTest(base.Cell0RebuildTestCase):
    """The loser of two rebuilds of a server: "another rebuild is in progress".

    Whatever it had read of the server when the winner moved it. The two
    rebuilds are interleaved deterministically: one runs entirely inside
    a step of the other (the harness's API calls nest).
    """

    def setUp(self):
        super().setUp()
        self.server = self._create_buried_server()
        self._start_compute('host1')
        self.in_progress = (
            "Instance %s is in an invalid state for 'rebuild' from cell0: "
            "another rebuild is in progress." % self.server['id'])

    def _other_rebuild_first(self, target):
        """Patch *target* to run a whole other rebuild before its first call.

        :returns: a list that receives the other rebuild's response.
        """
        real = self._patchable(target)
        other = []

        def other_rebuild_first(*args, **kwargs):
            if not other:
                other.append(None)  # nested calls go straight through
                other[0] = self._rebuild(self.server['id'])
            return real(*args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(target, other_rebuild_first))
        return other

    @staticmethod
    def _patchable(target):
        module, name = target.rsplit('.', 1)
        return getattr(importutils.import_module(module), name)

    def _other_rebuild_after(self, target):
        """Patch *target* to run a whole other rebuild after its first call.
        """
        real = self._patchable(target)
        other = []

        def other_rebuild_after(*args, **kwargs):
            result = real(*args, **kwargs)
            if not other:
                other.append(None)
                other[0] = self._rebuild(self.server['id'])
            return result
        self.useFixture(fixtures.MonkeyPatch(target, other_rebuild_after))
        return other

    def _assert_winner_and_loser(self, winner, loser):
        self.assertEqual(202, winner.status, winner.body)
        self.assertEqual(409, loser.status, loser.body)
        self.assertEqual(self.in_progress,
                         loser.body['conflictingRequest']['message'])
        self._wait_for_state_change(self.server, 'ACTIVE')

    def test_loser_reads_the_details_after_the_winner_deleted_them(self):
        # The loser read the cell0 instance; its fault, BDMs and actions
        # are read after the winner hard-deleted them: no fault.
        winner = self._other_rebuild_first(
            COMPUTE + 'load_cell0_details')
        loser = self._rebuild(self.server['id'])
        self._assert_winner_and_loser(winner[0], loser)

    def test_loser_reads_the_server_after_the_winner_deleted_it(self):
        # The loser saw the mapping point at cell0; the cell0 instance is
        # gone when it reads it.
        winner = self._other_rebuild_first(COMPUTE + 'get_server_in_cell')
        loser = self._rebuild(self.server['id'])
        self._assert_winner_and_loser(winner[0], loser)

    def test_loser_reads_the_server_the_winner_claimed(self):
        # The loser reads the instance between the winner's claim and its
        # move: the instance has the winner's task state.
        loser = self._other_rebuild_after(CELL0_ROWS + 'claim')
        winner = self._rebuild(self.server['id'])
        self._assert_winner_and_loser(winner, loser[0])

    def test_other_project_still_gets_not_found(self):
        # Nova's 404 to a caller of another project says nothing of the
        # server, a race with a rebuild neither.
        self._other_rebuild_first(COMPUTE + 'get_server_in_cell')
        other = api_client.TestOpenStackClient(
            'other', self.api.base_url, project_id='other-project',
            roles=['member', 'reader'])
        other.microversion = 'latest'
        resp = self._rebuild(self.server['id'], api=other)
        self.assertEqual(404, resp.status, resp.body)
        self.assertEqual(
            'Instance %s could not be found.' % self.server['id'],
            resp.body['itemNotFound']['message'])
