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

"""Violations the explorer found, each replayed by name (issue 25).

Each test replays one schedule, written as the explorer printed it
(``actors:choices``; see doc/source/contributor/interleavings.rst), and
asserts that the kind of violation it showed does not occur. The step
points of each schedule are in its comment, so that a schedule can be
rewritten when tests/interleavings/step_points.py changes.
"""

from nova_cell0_rebuild.tests.interleavings import harness


class FoundTest(harness.Exploration):

    def test_two_heals_overlap_in_their_undo(self):
        # Issue 25, point 1. The move is interrupted once the cell0 rows
        # are gone (at "still pending"); heal_a buries the server in cell0
        # again and stops before its remap; heal_b, after heal_a's lease
        # ran out too, maps the server to that row; heal_a's remap is then
        # refused and must not delete the row.
        spec = 'rebuild_a,heal_a,heal_b:0,0,0,0,0,0,1,1,1,1,2,2,2,2,2'
        self.assertNotFound('lost', spec)
        self.assertNotFound('homes', spec)
        steps = self.last_run.steps
        # heal_a wrote the cell0 row and stopped before its remap (where
        # it is next released from); heal_b meanwhile took the lease over.
        self.assertEqual(('heal_b', 'heal take over'), steps[11])
        self.assertEqual('undo remap', [at for actor, at in steps[10:]
                                        if actor == 'heal_a'][0])

    def test_rename_between_the_build_request_and_the_hard_delete(self):
        # Issue 25, point 2: a rename Nova accepts while the server is the
        # move's BuildRequest (rebuild_a @ cell0 hard delete) is not on the
        # rebuilt server.
        self.assertNotFound('write dropped',
                            'rebuild_a,rename:0,0,0,0,0,1,0,0,0,0')

    def test_rename_between_the_last_read_and_the_cast(self):
        # A rename Nova accepts once the move took the BuildRequest's
        # stored edits (rebuild_a @ conductor: after still pending) is not
        # on the rebuilt server: the conductor builds the instance from the
        # build request it was cast (Nova's own create loses a rename in
        # the same window). The filter refuses the rename (409) until the
        # conductor built the server in a cell.
        self.assertNotFound('write dropped',
                            'rebuild_a,rename:0,0,0,0,0,0,0,1,0,0')

    def test_delete_accepted_while_the_move_lands_the_server(self):
        # The DELETE reads the server in cell0 (delete @ start), the move
        # then runs to its end and the server lands in cell1; Nova's
        # delete of the cell0 instance it read answers 204 and deletes
        # nothing: the server lives on after an accepted DELETE.
        self.assertNotFound('undead',
                            'rebuild_a,delete:0,1,0,0,0,0,0,0,0,0,1')

    def test_delete_between_the_hard_delete_and_the_cast(self):
        # The DELETE is accepted while the move holds a BuildRequest; the
        # move's BuildRequest survives the delete: a home after a 204.
        self.assertNotFound('homes', 'rebuild_a,delete:0,1,0,0,0,0,0,1,1,0')

    def test_delete_racing_the_hard_delete_answers_no_5xx(self):
        # Nova's delete of the cell0 instance it read, once the move
        # hard-deleted it: AttributeError, 500.
        self.assertNotFound('answer 5xx',
                            'rebuild_a,delete:0,1,0,0,0,0,1,0,0,0,0,0')

    def test_history_after_delete_archive_and_purge(self):
        # Issue 25, point 3: the rebuilt server is deleted, archived and
        # purged; the original create, its burial fault and the rebuild
        # action must be in the shadow tables.
        self.assertNotFound('history',
                            'rebuild_a,delete:0,0,0,0,0,0,0,0,0,1,1')

    def test_history_of_a_server_deleted_as_the_moves_build_request(self):
        # The move hard-deleted the cell0 rows (rebuild_a @ cell0 hard
        # delete); Nova's DELETE, asked again once the server is the
        # move's BuildRequest, deletes that; the move sees it gone (@ still
        # pending). No cell has a row of the server: its history (the
        # original create and its events, the burial fault) must still
        # reach the shadow tables, kept with a deleted cell0 row.
        spec = 'rebuild_a,delete:0,1,0,0,0,0,0,1,1,0,1'
        self.assertNotFound('history', spec)
        self.assertNotFound('left behind', spec)

    def test_history_of_a_server_deleted_once_cast(self):
        # As above, but Nova's second delete comes once the move read the
        # BuildRequest (@ still pending): the move casts, the conductor
        # finds the BuildRequest gone and writes no row; the DELETE's
        # hook keeps the server deleted in cell0 with the stashed history.
        spec = 'rebuild_a,delete:0,1,0,0,0,0,0,1,0,1,0,0,1'
        self.assertNotFound('history', spec)
        self.assertNotFound('left behind', spec)

    def test_lock_of_the_build_request_answers_no_5xx(self):
        # An admin's lock while the server is the move's BuildRequest
        # (rebuild_a @ cell0 hard delete): OrphanedObjectError, 500.
        self.assertNotFound('answer 5xx',
                            'rebuild_a,lock:0,0,0,0,0,1,0,0,0,0')

    def test_reset_state_of_the_build_request_answers_no_5xx(self):
        self.assertNotFound('answer 5xx',
                            'rebuild_a,reset_state:0,0,0,0,0,1,0,0,0,0')

    def test_delete_while_the_conductor_drops_the_hand_off(self):
        # Found by the explorer (triple rebuild_a, drop, delete). The user
        # deletes the server while the move hands it off (nova delete
        # after "still pending"); the conductor's scheduler claims, then
        # the conductor drops the build before it looks for the
        # BuildRequest (which would have released the claim). The DELETE
        # keeps the hand-off's journal, marked, and heal releases the
        # claim once hand_off_timeout passed.
        self.assertNotFound(
            'left behind',
            'rebuild_a,drop,delete:0,0,0,1,0,2,0,0,0,2,2,0,2,0')
