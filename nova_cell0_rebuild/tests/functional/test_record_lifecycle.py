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

"""A create record lives while its servers may need a rebuild from cell0.

Everything is settled within the requests (create, rebuild, delete) and by
purge: no background work, so nothing to wait for.
"""

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.operations import purge as purge_ops
from nova_cell0_rebuild.tests.functional import base


class RecordLifecycleTest(base.Cell0RebuildTestCase):

    def _records(self):
        with db_api.reader(self.admin_context) as session:
            return [(r.status, r.instance_uuid) for r in
                    session.query(models.CreateRecord).all()]

    def _purge(self):
        return purge_ops.purge(self.admin_context)['create_records']

    def test_create_that_lands_is_forgotten_by_purge(self):
        self._start_compute('host1')
        server = self._build_server(image_uuid=self.image_id,
                                    networks='none')
        server = self.api.post_server({'server': server})
        self._wait_for_state_change(server, 'ACTIVE')
        # Accepted within the create request, kept until purge.
        self.assertEqual([('accepted', server['id'])], self._records())
        self.assertEqual(1, len(self._purge()))
        self.assertEqual([], self._records())

    def test_kept_while_buried_and_rebuilt_again_then_forgotten(self):
        server = self._create_buried_server()
        self.assertEqual([('accepted', server['id'])], self._records())
        # No capacity yet: buried again, the record stays.
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._wait_for_state_change(server, 'ERROR')
        self.assertEqual([], self._purge())
        self.assertEqual([('accepted', server['id'])], self._records())
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual([('accepted', server['id'])], self._records())
        self.assertEqual(1, len(self._purge()))
        self.assertEqual([], self._records())

    def test_delete_forgets_the_record(self):
        server = self._create_buried_server()
        self.assertEqual(1, len(self._records()))
        self._delete_server(server)
        self.assertEqual([], self._records())

    def test_siblings_share_it_until_the_last_lands(self):
        first = self._create_buried_server(min_count=2, max_count=2)
        siblings = self.api.get_servers(search_opts={
            'reservation_id': first['OS-EXT-SRV-ATTR:reservation_id']})
        for sibling in siblings:
            self._wait_for_state_change(sibling, 'ERROR')
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(siblings[0]['id']).status)
        self._wait_for_state_change(siblings[0], 'ACTIVE')
        self.assertEqual([], self._purge())
        self.assertEqual(1, len(self._records()))
        self.assertEqual(202, self._rebuild(siblings[1]['id']).status)
        self._wait_for_state_change(siblings[1], 'ACTIVE')
        self.assertEqual(1, len(self._purge()))
        self.assertEqual([], self._records())
