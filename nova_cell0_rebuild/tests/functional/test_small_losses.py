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

from nova import objects as nova_objects

from nova_cell0_rebuild.tests.functional import base


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
