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

"""A move whose database writes fail as a Galera cluster makes them fail.

DBDeadlock is what a write gets when another node's write to the same rows
won certification (tests/functional/db/test_galera.py races them on a real
cluster); DBConnectionError when a node fails over. Here they are injected
into the move's API-database transaction (the BuildRequest, the mapping,
the RequestSpec, the stashed history and the journal's step, in one).
"""

import fixtures
from oslo_db import exception as db_exc

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tasks import server_history
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults


class DatabaseErrorsTest(test_move_faults.MoveChecks,
                         base.Cell0RebuildTestCase):

    def _fail_in_the_move_transaction(self, error, times):
        """Raise *error* at the end of the move's transaction, the first
        *times* times (``self.failures`` from then on), after the
        journal's step was written in it.

        :returns: a list that counts the transactions that ran to there.
        """
        real = server_history.stash_in_move
        reached = []
        self.failures = times

        def stash_in_move(*args, **kwargs):
            also = real(*args, **kwargs)

            def also_then_fail():
                also()
                reached.append(1)
                if len(reached) <= self.failures:
                    raise error
            return also_then_fail
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.tasks.server_history.stash_in_move',
            side_effect=stash_in_move))
        return reached

    def _journal(self, server_id):
        with db_api.reader(self.admin_context) as session:
            return session.query(models.MoveJournal).filter_by(
                instance_uuid=server_id).one()

    def _buried_and_before(self):
        self._set_capacity(False)
        server = self._buried()
        self._set_capacity(True)
        return server, self._user_fields(server['id'])

    def test_a_deadlock_is_retried_with_the_objects_as_they_were(self):
        # The retry runs the whole transaction again: the journal's step,
        # the BuildRequest and the RequestSpec must not have moved on in
        # memory with the attempt that was rolled back (the journal's next
        # compare-and-swap would then fail, and the BuildRequest refuse a
        # second create).
        server, before = self._buried_and_before()
        reached = self._fail_in_the_move_transaction(
            db_exc.DBDeadlock(), times=2)
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual(3, len(reached))
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server['id']))
        self.assertEqual(before, self._user_fields(server['id']))
        journal = self._journal(server['id'])
        self.assertEqual(('done', 'cast_sent'),
                         (journal.status, journal.step))

    def test_a_deadlock_left_after_the_retries_answers_409(self):
        server, before = self._buried_and_before()
        reached = self._fail_in_the_move_transaction(
            db_exc.DBDeadlock(), times=100)
        resp = self._rebuild(server['id'])
        self.assertEqual(409, resp.status, resp.body)
        self.assertIn('retry the rebuild',
                      resp.body['conflictingRequest']['message'])
        self.assertEqual(6, len(reached))  # the first and five retries
        # Nothing was committed: the task undid its claim.
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual('rolled_back', self._journal(server['id']).status)
        self.assertEqual(before, self._user_fields(server['id']))

    def test_a_lost_connection_answers_503_and_is_not_retried(self):
        server, before = self._buried_and_before()
        reached = self._fail_in_the_move_transaction(
            db_exc.DBConnectionError(), times=100)
        resp = self._rebuild(server['id'])
        self.assertEqual(503, resp.status, resp.body)
        self.assertIn('retry the rebuild later',
                      resp.body['serviceUnavailable']['message'])
        self.assertEqual(1, len(reached))
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(before, self._user_fields(server['id']))
        # The database answers again: rebuilt.
        self.failures = 0
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_heal_leaves_a_contended_take_over_alone(self):
        # Heal's take-over refused each time it was retried: another
        # actor's write to the journal won on another node.
        server, before = self._buried_and_before()
        with self._inject('nova_build_requests.new_build_request',
                          self._die):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])
        with fixtures.MockPatchObject(
                move_journal.MoveJournal, '_take_over_in_db',
                side_effect=db_exc.DBDeadlock()):
            healed = self._heal_after_restart(server['id'])
        self.assertEqual([(server['id'], 'claimed', heal.CONTENDED)],
                         healed)
        # Then, as any move whose lease expired: healed, rolled back.
        self.assertEqual([(server['id'], 'claimed', heal.ROLLED_BACK)],
                         self._heal_after_restart(server['id']))
        self.assertEqual('cell0', self._assert_exists_once(server['id']))

    @staticmethod
    def _die():
        raise test_move_faults.SimulatedCrash()
