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

"""Every interleaving of the pending service's actors (issue 27, item 9).

The world's server waits for room (pending_actors.open_wait); the new
actors (``pending``, ``pending_b``, ``cancel``) are paired with each other
and with the actors that race a move the most. The pairs are spread over
test classes as test_pairs.py spreads its own.

A pass paired with ``rebuild_a`` is a seeded sample of its schedules, as
test_triples.py samples triples: each of the pass's four segments writes
(the epoch, its heartbeat, the wait and the move, the settle), so nothing
prunes its orders against the ten of a rebuild (C(14, 4) = 1001
schedules, more than the rest of this file's pairs together several
times over; spec "Explorer", CI budget of 1.5 min).
"""

from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.interleavings import harness

#: The actors of a move each new actor is paired with.
RACERS = ('rebuild_a', 'delete', 'heal_a', 'lock', 'purge')

PAIRS = ([(racer, 'pending') for racer in RACERS if racer != 'rebuild_a']
         + [(racer, 'cancel') for racer in RACERS]
         + [('pending', 'pending_b'), ('pending', 'cancel'),
            ('pending_b', 'cancel')])

#: Sampled: (pairs, schedules of each, seed).
SAMPLED = ([('rebuild_a', 'pending'), ('rebuild_a', 'pending_b')], 20, 27)

#: Classes the pairs are spread over (each sets Nova up once).
CLASSES = 2

#: Schedules of each pair, as measured (to balance the classes).
COST = {('purge', 'pending'): 70, ('rebuild_a', 'cancel'): 30,
        ('delete', 'pending'): 28, ('pending', 'pending_b'): 22,
        ('pending', 'cancel'): 17, ('pending_b', 'cancel'): 12,
        ('delete', 'cancel'): 6, ('purge', 'cancel'): 5,
        ('lock', 'pending'): 5, ('heal_a', 'pending'): 5,
        ('heal_a', 'cancel'): 3, ('lock', 'cancel'): 3}


globals().update(harness.pair_classes(
    __name__, 'PendingPairs%02dTest', PAIRS, CLASSES,
    lambda pair: COST.get(pair, 10), pending=True))


class PendingSampleTest(harness.Exploration):
    """A pass with a rebuild: a seeded sample of schedules."""

    pending = True

    def test_seeded_sample(self):
        pairs, count, seed = SAMPLED
        self.explore(pairs, sample=(count, seed))


class PendingWorldTest(harness.Exploration):
    """The pending world is not vacuous: each new actor alone acts."""

    pending = True

    def _wait_state(self):
        return objects.Cell0Wait.get_by_instance_uuid(self.admin_context,
                                                      self.server_id)

    def test_a_pass_alone_rebuilds_the_waiting_server(self):
        self.assertEqual('waiting', self._wait_state().state)
        self.assertEqual([], self.replay('pending:0,0,0,0'))
        [(name, report)] = self.passes
        self.assertEqual(('pending', [self.server_id]),
                         (name, report.dispatched))
        self.assertEqual(1, self.hand_offs)
        self.assertEqual(self.server_id, self.final['id'])
        self.assertEqual('ACTIVE', self.final['status'])
        self.assertIsNone(self._wait_state())
        self.assertEqual([('dispatch', True)], self.wait_log)

    def test_a_cancel_alone_ends_the_wait(self):
        self.assertEqual([], self.replay('cancel:0,0'))
        self.assertEqual([('cancel', 204)],
                         [(actor, status) for actor, _, status, _
                          in self.answers])
        self.assertEqual(('ended', 'cancelled'),
                         (self._wait_state().state,
                          self._wait_state().reason_code))

    def test_a_pass_after_a_cancel_dispatches_nothing(self):
        # cancel ends the wait (@ wait end, then its CAS), then the pass,
        # which finds no eligible wait: it reaches no step point.
        self.assertEqual([], self.replay('pending,cancel:1,1,0'))
        self.assertEqual([('cancel', 'start'), ('cancel', 'wait end'),
                          ('pending', 'start')], self.last_run.steps)
        self.assertEqual([], self.passes[0][1].dispatched)
        self.assertEqual(0, self.hand_offs)
        self.assertEqual([('end', True)], self.wait_log)
        self.assertEqual('ended', self._wait_state().state)

    def test_a_cancel_that_read_the_wait_before_the_dispatch(self):
        # cancel reads the wait (@ wait end); the pass takes it and moves
        # the server (pending @ settle); cancel's CAS loses, it reads the
        # wait again (dispatched) and ends it; the settle forgets it.
        self.assertEqual([], self.replay(
            'pending,cancel:1,0,0,0,1,1,0'))
        self.assertEqual(
            [('cancel', 'start'), ('pending', 'start'),
             ('pending', 'epoch check'), ('pending', 'wait dispatch'),
             ('cancel', 'wait end'), ('cancel', 'wait end'),
             ('pending', 'settle')], self.last_run.steps)
        self.assertEqual(
            [('dispatch', True), ('end', False), ('end', True)],
            self.wait_log)
        self.assertEqual(1, self.hand_offs)
        self.assertEqual('ACTIVE', self.final['status'])
        self.assertIsNone(self._wait_state())

    def test_a_deposed_copy_dispatches_nothing(self):
        # pending takes epoch 2 (its first segment) and stops @ epoch
        # check; pending_b's heartbeat of epoch 1 then fails: its pass
        # stops before it takes the wait; pending's pass dispatches.
        self.assertEqual([], self.replay('pending,pending_b:0,1,1,0,0,0'))
        self.assertEqual([('pending_b', []), ('pending', [self.server_id])],
                         [(name, report.dispatched)
                          for name, report in self.passes])
        self.assertEqual([('dispatch', True)], self.wait_log)
