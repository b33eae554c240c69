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

"""Nova 34's 500 for a lock sent while a server waits to be scheduled.

Until the conductor has put a server in a cell, Nova's API reads it from
its BuildRequest, as an Instance with no database behind it, and
``compute.api.API.lock`` saves that object: ``OrphanedObjectError``, a 500.
A create opens this window and so does every rebuild from cell0 (the
server is a BuildRequest again until the conductor places or buries it);
in the second the filter answers 409 before Nova's save
(admin/concurrent-edits.rst). doc/source/user/limitations.rst says so; if
test_lock_after_create fails, Nova fixed it and the entry can go.
"""

from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_delete_races as races

SCHEDULE = 'nova.conductor.manager.ComputeTaskManager._schedule_instances'


class LockWhileSchedulingTest(base.Cell0RebuildTestCase):

    def _lock(self, server_id):
        return self.api.api_post('/servers/%s/action' % server_id,
                                 {'lock': None}, check_response_status=False)

    def _assert_refused_then_lockable(self, server, scheduling, status,
                                      fault, message):
        """A lock while *scheduling* is held is refused with *status*,
        *fault* naming *message*, and changes nothing; once buried, 202.
        """
        scheduling.wait_reached(self)
        shown = self.api.get_server(server['id'])
        self.assertEqual(('BUILD', 'scheduling'),
                         (shown['status'], shown['OS-EXT-STS:task_state']))
        resp = self._lock(server['id'])
        self.assertEqual(status, resp.status)
        self.assertIn(message, resp.body[fault]['message'])
        self.assertFalse(self.api.get_server(server['id'])['locked'])
        scheduling.release_and_wait(self)
        # No compute: buried in cell0, where a lock works.
        self._wait_for_state_change(server, 'ERROR')
        self.assertEqual(202, self._lock(server['id']).status)
        self.assertTrue(self.api.get_server(server['id'])['locked'])

    def test_lock_after_create(self):
        scheduling = self.useFixture(races.Hold(SCHEDULE))
        server = self.api.post_server({'server': self._build_server(
            image_uuid=self.image_id, networks='none')})
        self._assert_refused_then_lockable(server, scheduling, 500,
                                           'computeFault',
                                           'OrphanedObjectError')

    def test_lock_after_rebuild_from_cell0(self):
        # The filter's 409, before Nova's save of the BuildRequest.
        server = self._create_buried_server()
        scheduling = self.useFixture(races.Hold(SCHEDULE))
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._assert_refused_then_lockable(server, scheduling, 409,
                                           'conflictingRequest',
                                           'task_state scheduling')
