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

A forced host kept, an unmigrated mapping moved, and the loser of two
concurrent rebuilds told that another rebuild is in progress.
"""

import fixtures
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import exception as nova_exception
from nova import objects as nova_objects

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.tests.functional import base

PIPELINE = 'nova_cell0_rebuild.adapters.nova_create_pipeline.'


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
        with fixtures.MockPatch(PIPELINE + 'destroy_cell0_instance',
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
