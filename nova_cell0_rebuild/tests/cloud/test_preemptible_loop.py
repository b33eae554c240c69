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

"""The pre-emptible loop on a real multi-process cloud, with real clients.

A full cloud, a server buried in cell0, a pre-emptible deleted to make
room, the buried server rebuilt with ``openstack server rebuild``: it must
come back ACTIVE as the same server, with everything it was created with.
"""

import fixtures

from nova_cell0_rebuild.tests.cloud import base
from nova_cell0_rebuild.tests.cloud import clients


class PreemptibleLoopTest(base.CloudTestCase):

    def test_rebuilt_with_the_openstack_cli(self):
        private_key = self.useFixture(fixtures.TempDir()).join('loop-key')
        self.cloud.osc('demo-member', 'keypair', 'create', 'loop-key',
                       '--private-key', private_key, '-f', 'json')
        self.addCleanup(self.cloud.osc, 'demo-member', 'keypair', 'delete',
                        'loop-key')
        uuid, preemptibles = self.full_cloud_with_a_buried_server(
            name='loop', metadata={'owner': 'scenario'},
            key_name='loop-key')
        before = self.cloud.osc('demo-member', 'server', 'show', uuid,
                                '-f', 'json',
                                microversion=clients.MICROVERSION)
        self.delete(preemptibles[0])

        self.cloud.osc('demo-member', 'server', 'rebuild', '--image',
                       self.cloud.image_id, '--wait', uuid, '-f', 'json',
                       microversion=clients.MICROVERSION)

        after = self.cloud.osc('demo-member', 'server', 'show', uuid,
                               '-f', 'json',
                               microversion=clients.MICROVERSION)
        self.assertEqual('ACTIVE', after['status'])
        for field in ('id', 'name', 'properties', 'key_name', 'created',
                      'addresses', 'user_id', 'project_id'):
            self.assertEqual(before[field], after[field], field)
        self.assertEqual({'owner': 'scenario'}, after['properties'])
        events = self.cloud.osc('demo-member', 'server', 'event', 'list',
                                uuid, '-f', 'json')
        self.assertEqual(['create', 'rebuild'],
                         sorted(event['Action'] for event in events),
                         events)
        self.assert_one_allocation(uuid)

    def test_rebuilt_with_its_port(self):
        conn = self.cloud.sdk('demo-member')
        network = conn.network.find_network('shared')
        port = conn.network.create_port(
            network_id=network.id, project_id=conn.current_project_id,
            name='loop-port')
        self.addCleanup(conn.network.delete_port, port.id)
        self.addCleanup(self._delete_all_servers)  # before the port goes
        uuid, preemptibles = self.full_cloud_with_a_buried_server(
            name='with-port', networks=[{'port': port.id}])
        self.assertEqual('', conn.network.get_port(port.id).device_id)
        self.delete(preemptibles[0])

        self.cloud.osc('demo-member', 'server', 'rebuild', '--image',
                       self.cloud.image_id, '--wait', uuid, '-f', 'json',
                       microversion=clients.MICROVERSION)

        server = self.show(uuid, cloud='admin')
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(
            [port.fixed_ips[0]['ip_address']],
            [address['addr'] for address in server['addresses']['shared']])
        bound = conn.network.get_port(port.id)
        self.assertEqual(uuid, bound.device_id)
        self.assertEqual(server['OS-EXT-SRV-ATTR:host'],
                         bound.binding_host_id)
        self.assert_one_allocation(uuid)

    def test_reader_other_project_and_personality_files(self):
        uuid, preemptibles = self.full_cloud_with_a_buried_server()
        with_files = self.create_with_files()
        self.wait_for_status(with_files, 'ERROR')
        self.delete(preemptibles[0])

        status, body = self.rebuild(uuid, cloud='demo-reader')
        self.assertEqual(403, status, body)
        status, body = self.rebuild(uuid, cloud='other-member')
        self.assertEqual(404, status, body)
        status, body = self.rebuild(with_files)
        self.assertEqual(409, status, body)
        self.assertIn('personality', body['conflictingRequest']['message'])

        status, body = self.rebuild(uuid)
        self.assertEqual(202, status, body)
        self.wait_for_status(uuid, 'ACTIVE')
        self.assert_one_allocation(uuid)
        self.assertEqual('ERROR', self.show(with_files)['status'])
