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

"""Two undos of one move that overlap never lose the server (issue 25, 1).

An undo that buries the server in cell0 again writes the cell0 row, then
points the mapping at it. When it is slower than its lease between the
two, a heal takes the lease over, finds that row and maps the server to
it. The slow undo then finds its remap refused; it must leave the row the
mapping points at, and say it was taken over, never "rolled back".
"""

import pkgutil

import eventlet

from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import test_move_faults
from nova_cell0_rebuild.tests.functional import test_move_lease

#: The remap that ends a burial again: the undo parks just before it.
REMAP = (test_move_faults.ADAPTERS +
         'nova_build_requests.remap_to_cell0_and_drop_build_request')


class _FirstCallHeld(object):
    """Holds the first caller of a function; later callers pass."""

    def __init__(self, real):
        self.real = real
        self.hold = test_move_lease._Hold()
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 1:
            self.hold()
        return self.real(*args, **kwargs)


class OverlappingUndosTest(test_move_lease._LeaseTestBase):

    def _held_remap(self):
        held = _FirstCallHeld(pkgutil.resolve_name(REMAP))
        self.useFixture(test_move_faults.fixtures.MonkeyPatch(REMAP, held))
        return held

    def _assert_buried_once_and_rebuildable(self, server, before):
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(
            'ERROR', self.api.get_server(server['id'])['status'])
        self.assertEqual([], heal.heal(self.admin_context,
                                       self.lease_seconds))
        self._assert_back_in_cell0_then_rebuilt(server, before)

    def test_rollback_slower_than_its_lease_then_heal(self):
        # The move fails once its cell0 rows are gone: the task's rollback
        # buries it again, and parks between the cell0 write and the remap.
        server = self._buried_with_room()
        before = self._user_fields(server['id'])
        held = self._held_remap()

        def fail():
            raise RuntimeError('injected once the rows are gone')
        with self._inject('nova_request_specs.complete_request_spec', fail):
            move = self._rebuild_in_background(server['id'])
            held.hold.reached.wait()
            healed = self._heal_after_restart(server['id'])
            held.hold.release.send()
            resp = move.wait()
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(
            [(server['id'], fields.MoveStep.CELL0_ROWS_REMOVED,
              heal.ROLLED_BACK)], healed)
        self.assertEqual(500, resp.status, resp.body)
        self._assert_buried_once_and_rebuildable(server, before)

    def test_two_heals_overlap(self):
        # An operator runs heal from cron on two nodes: the first parks in
        # its burial, the second takes the lease over once it expired.
        server = self._buried_with_room()
        before = self._user_fields(server['id'])

        def die():
            raise test_move_faults.SimulatedCrash()
        with self._inject('nova_request_specs.complete_request_spec', die):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])
        held = self._held_remap()
        self._expire_move_leases(server['id'])
        first = eventlet.spawn(heal.heal, self.admin_context,
                               self.lease_seconds)
        held.hold.reached.wait()
        second = self._heal_after_restart(server['id'])
        held.hold.release.send()
        first = first.wait()
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(
            [(server['id'], fields.MoveStep.CELL0_ROWS_REMOVED,
              heal.ROLLED_BACK)], second)
        # The first heal lost its lease: it says so, not "rolled back".
        self.assertEqual(
            [(server['id'], fields.MoveStep.CELL0_ROWS_REMOVED,
              heal.TAKEN_OVER)], first)
        self._assert_buried_once_and_rebuildable(server, before)
