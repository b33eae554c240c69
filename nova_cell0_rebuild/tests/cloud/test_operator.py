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

"""The operator's console scripts against the real services."""

import json

from nova_cell0_rebuild.tests.cloud import base


class OperatorTest(base.CloudTestCase):

    def test_list_show_rebuild_heal_purge_status(self):
        uuid, preemptibles = self.full_cloud_with_a_buried_server()
        listing = json.loads(self.cloud.manage(
            'list', '--format', 'json').stdout)
        self.assertEqual([uuid], [entry['uuid'] for entry in listing])
        self.assertTrue(listing[0]['rebuildable'], listing)
        shown = json.loads(self.cloud.manage('show', uuid).stdout)
        self.assertEqual(uuid, shown['uuid'])
        self.delete(preemptibles[0])

        # As a service (the [service_user] of nova.conf): real Glance.
        rebuilt = self.cloud.manage('rebuild', uuid)
        self.assertIn('handed back to the conductor', rebuilt.stdout)
        self.wait_for_status(uuid, 'ACTIVE')
        self.assert_one_allocation(uuid)

        self.assertEqual(0, self.cloud.manage('heal').returncode)
        purge = self.cloud.manage('purge', '--dry-run')
        self.assertIn('Would delete', purge.stdout)
        check = self.cloud.status('upgrade', 'check')
        self.assertNotIn('Failure', check.stdout)
