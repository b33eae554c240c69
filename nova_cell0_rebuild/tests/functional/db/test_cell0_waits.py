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

"""Waits of issue 27, their shapes and the dispatcher's epoch, under races.

Run on SQLite, MySQL/MariaDB and PostgreSQL. Workers are green threads;
PyMySQL yields on every round trip, so on MySQL they really interleave.
"""

import datetime

import eventlet
import fixtures
from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tests.functional.db import base
from nova_cell0_rebuild.tests import statements as sql_counting

INSTANCE = '7d0c2a31-5e4f-4b6a-9c8d-1e2f3a4b5c6d'
WORKERS = 16
LEASE = 120
_TRANSACTION = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE')

State = fields.WaitState
Reason = fields.WaitReason


def _at(hours):
    """A naive UTC time, whole seconds (as MySQL's DATETIME keeps it)."""
    return (timeutils.utcnow().replace(microsecond=0) +
            datetime.timedelta(hours=hours))


def _naive(value):
    return None if value is None else value.replace(tzinfo=None)


class _Base(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()

    def _open(self, uuid=INSTANCE, user_id='user', source='metadata',
              queued_at=None, deadline=None, **kwargs):
        return objects.Cell0Wait.open(
            self.context, uuid, 'project', user_id, source,
            queued_at or _at(-1), deadline or _at(6), **kwargs)

    def _get(self, uuid=INSTANCE):
        return objects.Cell0Wait.get_by_instance_uuid(self.context, uuid)

    def _rows(self):
        with db_api.reader(self.context) as session:
            return session.query(models.Cell0Wait).all()

    def _race(self, work):
        pool = eventlet.GreenPool(WORKERS)
        outcomes = []

        def attempt(i):
            try:
                outcomes.append(work(i))
            except Exception as exc:
                outcomes.append('%s: %s' % (type(exc).__name__, exc))
        for i in range(WORKERS):
            pool.spawn_n(attempt, i)
        pool.waitall()
        return outcomes

    def _count_statements(self):
        statements = []

        def record(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith(_TRANSACTION):
                return
            if sql_counting.is_connection_ping(statement):
                return
            statements.append(statement)
        sa.event.listen(self.engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', record)
        return statements


class _OpenTest(_Base):

    def test_open_inserts_a_waiting_wait(self):
        queued, deadline = _at(-1), _at(6)
        wait = self._open(queued_at=queued, deadline=deadline,
                          reason_code=Reason.CLAMPED, last_reason='7d')
        found = self._get()
        for read in (wait, found):
            self.assertEqual(
                (State.WAITING, 'metadata', 'user', 'project', 0, 0,
                 Reason.CLAMPED, '7d'),
                (read.state, read.source, read.user_id, read.project_id,
                 read.attempts, read.lease_token, read.reason_code,
                 read.last_reason))
            self.assertEqual((queued, deadline),
                             (_naive(read.queued_at), _naive(read.deadline)))
        self.assertIsNone(found.next_attempt_at)
        self.assertIsNone(found.ended_at)

    def _check_update_of_open(self, wait):
        queued, token, attempts = wait.queued_at, wait.lease_token, \
            wait.attempts
        state = wait.state
        new_deadline = _at(48)
        opened = self._open(user_id='other', source='api',
                            queued_at=_at(-100), deadline=new_deadline)
        for read in (opened, self._get()):
            self.assertEqual(
                (state, 'api', 'other', token, attempts, None, None,
                 queued),
                (read.state, read.source, read.user_id, read.lease_token,
                 read.attempts, read.reason_code, read.last_reason,
                 read.queued_at))
            self.assertEqual(new_deadline, _naive(read.deadline))
        return new_deadline

    def test_open_of_a_waiting_wait_changes_its_deadline_only(self):
        wait = self._open(reason_code=Reason.CLAMPED, last_reason='7d')
        wait.note(Reason.NO_CANDIDATE, 'no room')
        self._check_update_of_open(wait)

    def test_open_of_a_dispatched_wait_leaves_its_dispatcher_alone(self):
        wait = self._open()
        self.assertTrue(wait.dispatch('pending-1', LEASE))
        deadline = self._check_update_of_open(wait)
        # The dispatcher's object still settles the attempt.
        self.assertTrue(wait.back_off(Reason.SCHEDULER_REFUSED, 'again',
                                      _at(1)))
        self.assertEqual(deadline, _naive(self._get().deadline))

    def test_open_restarts_an_ended_wait_and_keeps_attempts(self):
        wait = self._open()
        self.assertTrue(wait.dispatch('pending-1', LEASE))
        self.assertTrue(wait.back_off(Reason.SCHEDULER_REFUSED, 'x',
                                      _at(1)))
        self.assertTrue(wait.end(Reason.DEADLINE, 'passed'))
        ended = self._get()
        self.assertIsNotNone(ended.ended_at)
        queued, deadline = _at(-2), _at(12)
        opened = self._open(source='api', user_id='u2', queued_at=queued,
                            deadline=deadline)
        for read in (opened, self._get()):
            self.assertEqual(
                (State.WAITING, 'api', 'u2', 1, ended.lease_token + 1,
                 None, None, None, None),
                (read.state, read.source, read.user_id, read.attempts,
                 read.lease_token, read.ended_at, read.next_attempt_at,
                 read.reason_code, read.last_reason))
            self.assertEqual((queued, deadline),
                             (_naive(read.queued_at), _naive(read.deadline)))
        # Whoever held the ended wait acts no more.
        self.assertFalse(ended.set_shape('k' * 64))
        self.assertEqual(1, len(self._rows()))

    def test_an_unknown_reason_is_refused_before_it_is_written(self):
        self.assertRaises(ValueError, self._open, reason_code='bored')
        self.assertEqual([], self._rows())
        wait = self._open()
        self.assertRaises(ValueError, wait.note, 'bored', 'x')
        self.assertRaises(ValueError, self._open, source='email')
        found = self._get()
        self.assertEqual(('metadata', None), (found.source,
                                              found.reason_code))

    def test_concurrent_opens_converge_to_one_row(self):
        outcomes = self._race(lambda i: self._open(
            user_id='user-%d' % i).state)
        self.assertEqual([State.WAITING] * WORKERS, outcomes)
        rows = self._rows()
        self.assertEqual(1, len(rows))
        self.assertEqual((State.WAITING, 0), (rows[0].state,
                                              rows[0].lease_token))

    def test_concurrent_opens_restart_an_ended_wait_once(self):
        wait = self._open()
        wait.end(Reason.CANCELLED, 'by the user')
        outcomes = self._race(lambda i: self._open(
            user_id='user-%d' % i).state)
        self.assertEqual([State.WAITING] * WORKERS, outcomes)
        rows = self._rows()
        self.assertEqual(1, len(rows))
        # One restart (a new token), the others updated the open wait.
        self.assertEqual((State.WAITING, 1), (rows[0].state,
                                              rows[0].lease_token))

    def test_an_insert_lost_through_another_node_reads_the_winner(self):
        # Galera: the other node's INSERT committed, ours is refused at
        # COMMIT at each retry (DBDeadlock): open reads the row and
        # updates it.
        real = cell0_wait.Cell0Wait._insert_in_db.__wrapped__

        def loses_to_another_node(context, values):
            real(context, dict(values, user_id='winner'))
            raise db_exc.DBDeadlock('1213')
        self.useFixture(fixtures.MockPatchObject(
            cell0_wait.Cell0Wait, '_insert_in_db',
            staticmethod(loses_to_another_node)))
        wait = self._open(user_id='loser')
        self.assertEqual('loser', wait.user_id)
        self.assertEqual(1, len(self._rows()))


class _CancelTest(_Base):

    def _cancel(self, uuid=INSTANCE):
        return objects.Cell0Wait.cancel(
            self.context, uuid, 'project', 'user', _at(-1), 'Cancelled.')

    def test_cancel_without_a_wait_keeps_one_from_starting(self):
        wait = self._cancel()
        self.assertEqual((State.ENDED, 'cancelled', 'api'),
                         (wait.state, wait.reason_code, wait.source))
        self.assertEqual(wait.ended_at, wait.deadline)
        # The intake of the create's opt-in reads the row first.
        stored = self._get()
        self.assertEqual((wait.id, State.ENDED, 'cancelled'),
                         (stored.id, stored.state, stored.reason_code))

    def test_the_intake_never_restarts_a_cancelled_wait(self):
        # The intake found no row; the user's DELETE wrote its ended row
        # before the intake's write: the cancel stands.
        self._cancel()
        self.assertIsNone(objects.Cell0Wait.open_new(
            self.context, INSTANCE, 'project', 'user', 'metadata', _at(-1),
            _at(6)))
        self.assertEqual((State.ENDED, 'cancelled'),
                         (self._get().state, self._get().reason_code))
        # Without a row it inserts the wait, once among racers.
        other = '7e4a2c1b-3d5f-4a6b-8c9d-0e1f2a3b4c5d'
        outcomes = self._race(lambda i: objects.Cell0Wait.open_new(
            self.context, other, 'project', 'user', 'metadata', _at(-1),
            _at(6)))
        self.assertEqual(1, len([o for o in outcomes if o is not None]),
                         outcomes)
        self.assertEqual(State.WAITING, self._get(other).state)

    def test_cancel_ends_a_wait_and_leaves_an_ended_one(self):
        self._open().dispatch('dispatcher-1', 60)
        wait = self._cancel()
        self.assertEqual((State.ENDED, 'cancelled', 1),
                         (wait.state, wait.reason_code, wait.attempts))
        ended_at = wait.ended_at
        self.assertEqual(ended_at, self._cancel().ended_at)
        # A PUT after it starts a new wait.
        self.assertEqual(State.WAITING, self._open().state)

    def test_cancels_and_opens_race_to_one_row(self):
        def cancel_or_open(i):
            return (self._cancel() if i % 2 else self._open()).state
        outcomes = self._race(cancel_or_open)
        self.assertEqual(
            {State.ENDED, State.WAITING}, set(outcomes), outcomes)
        self.assertEqual(1, len(self._rows()))


class _DispatchTest(_Base):

    def test_one_of_many_dispatchers_wins(self):
        self._open()
        waits = [self._get() for _ in range(WORKERS)]
        outcomes = self._race(lambda i: i if waits[i].dispatch(
            'pending-%d' % i, LEASE) else 'lost')
        self.assertEqual(WORKERS - 1, outcomes.count('lost'), outcomes)
        winners = [i for i in outcomes if i != 'lost']
        self.assertEqual(1, len(winners), outcomes)
        winner = waits[winners[0]]
        self.assertEqual('pending-%d' % winners[0], winner.owner)
        found = self._get()
        self.assertEqual(
            (State.DISPATCHED, 1, 1, winner.owner),
            (found.state, found.attempts, found.lease_token, found.owner))
        self.assertEqual((State.DISPATCHED, 1, 1),
                         (winner.state, winner.attempts,
                          winner.lease_token))
        self.assertIsNotNone(found.last_attempt_at)
        # The winner's object is the row it wrote.
        self.assertEqual(found.obj_to_primitive(), winner.obj_to_primitive())

    def test_a_stale_holder_loses_every_write(self):
        self._open()
        stale, other = self._get(), self._get()
        self.assertTrue(other.dispatch('pending-2', LEASE))
        before = self._get().obj_to_primitive()
        self.assertFalse(stale.dispatch('pending-1', LEASE))
        self.assertFalse(stale.record_request_id('req-stale'))
        self.assertFalse(stale.note(Reason.NO_CANDIDATE, 'stale'))
        self.assertFalse(stale.set_shape('s' * 64))
        self.assertFalse(stale.end(Reason.DEADLINE, 'stale'))
        stale.state = State.DISPATCHED  # as if read dispatched, old token
        self.assertFalse(stale.back_off(Reason.GATE_REFUSED, 'stale',
                                        None))
        self.assertEqual(before, self._get().obj_to_primitive())

    def test_an_attempt_backs_off_and_is_dispatched_again(self):
        wait = self._open()
        now = _at(0)
        self.assertTrue(wait.dispatch('pending-1', LEASE, now=now))
        self.assertEqual(now + datetime.timedelta(seconds=LEASE),
                         _naive(wait.lease_expires_at))
        self.assertTrue(wait.record_request_id('req-1'))
        self.assertFalse(wait.note(Reason.NO_CANDIDATE, 'dispatched'))
        self.assertTrue(wait.back_off(Reason.SCHEDULER_REFUSED,
                                      'anti-affinity', _at(1)))
        found = self._get()
        self.assertEqual(
            (State.WAITING, 1, 1, 'req-1', Reason.SCHEDULER_REFUSED,
             'anti-affinity', None),
            (found.state, found.attempts, found.lease_token,
             found.last_request_id, found.reason_code, found.last_reason,
             found.lease_expires_at))
        self.assertEqual(_at(1), _naive(found.next_attempt_at))
        self.assertFalse(wait.back_off(Reason.GATE_REFUSED, 'twice', None))
        self.assertTrue(wait.note(Reason.NO_CANDIDATE, 'no room'))
        self.assertTrue(wait.dispatch('pending-1', LEASE))
        self.assertTrue(wait.back_off(Reason.GATE_REFUSED, 'quota', None))
        found = self._get()
        self.assertEqual((2, 2, None), (found.attempts, found.lease_token,
                                        found.next_attempt_at))

    def test_end_from_waiting_or_dispatched_once(self):
        waiting = self._open()
        dispatched = self._open(uuid='8e1d3b42-6f50-4c7b-8d9e-2f3a4b5c6d7e')
        self.assertTrue(dispatched.dispatch('pending-1', LEASE))
        now = _at(0)
        for wait in (waiting, dispatched):
            self.assertTrue(wait.end(Reason.CANCELLED, 'by user', now=now))
            found = self._get(wait.instance_uuid)
            self.assertEqual((State.ENDED, Reason.CANCELLED, now),
                             (found.state, found.reason_code,
                              _naive(found.ended_at)))
            self.assertFalse(wait.end(Reason.DEADLINE, 'again'))
            self.assertFalse(wait.dispatch('pending-1', LEASE))

    def test_an_end_and_a_dispatch_never_both_win(self):
        self._open()
        waits = [self._get() for _ in range(WORKERS)]

        def end_or_dispatch(i):
            if i % 2:
                return 'ended' if waits[i].end(Reason.CANCELLED,
                                               'x') else False
            return 'dispatched' if waits[i].dispatch('p', LEASE) else False
        outcomes = self._race(end_or_dispatch)
        self.assertEqual(WORKERS - 1, outcomes.count(False), outcomes)
        self.assertIn(self._get().state, outcomes)

    def test_shape_is_recorded(self):
        wait = self._open()
        now = _at(0)
        self.assertTrue(wait.set_shape('a' * 64, now=now))
        found = self._get()
        self.assertEqual(('a' * 64, now), (found.shape_key,
                                           _naive(found.shape_computed_at)))

    def test_expired_dispatches_are_listed(self):
        uuids = ['%08d-1111-4111-8111-111111111111' % i for i in range(3)]
        now = _at(0)
        for uuid in uuids:
            self._open(uuid=uuid)
        self._get(uuids[0]).dispatch('dead', 10, now=now)
        self._get(uuids[1]).dispatch('alive', 3600, now=now)
        later = now + datetime.timedelta(seconds=60)
        self.assertEqual([uuids[0]], [
            wait.instance_uuid for wait in
            objects.Cell0Wait.list_expired_dispatches(self.context, later)])
        self.assertEqual([], objects.Cell0Wait.list_expired_dispatches(
            self.context, now))

    def test_destroy_twice(self):
        wait = self._open()
        wait.destroy()
        wait.destroy()
        self.assertIsNone(self._get())
        self.assertFalse(wait.dispatch('pending-1', LEASE))

    def test_a_swap_refused_at_each_retry_is_lost(self):
        wait = self._open()
        self.useFixture(fixtures.MockPatchObject(
            cell0_wait.Cell0Wait, '_swap_in_db',
            side_effect=db_exc.DBDeadlock('1213')))
        self.assertFalse(wait.dispatch('pending-1', LEASE))
        self.assertEqual((State.WAITING, 0, 0),
                         (wait.state, wait.attempts, wait.lease_token))

    def test_the_waits_of_a_page_are_one_statement(self):
        uuids = ['%08d-2222-4222-8222-222222222222' % i for i in range(50)]
        for uuid in uuids[::2]:
            self._open(uuid=uuid)
        statements = self._count_statements()
        self.assertEqual({}, objects.Cell0Wait.get_by_instance_uuids(
            self.context, []))
        self.assertEqual([], statements)
        for page in (uuids[:1], uuids[:2], uuids):
            del statements[:]
            found = objects.Cell0Wait.get_by_instance_uuids(self.context,
                                                            page)
            self.assertEqual(sorted(page[::2]), sorted(found))
            self.assertEqual(1, len(statements), statements)
            self.assertEqual(page[0], found[page[0]].instance_uuid)


class _ShapeTest(_Base):

    QUERIES = ['resources=VCPU:8,MEMORY_MB:16384&required=!COMPUTE_'
               'STATUS_DISABLED', 'resources=PCPU:8,MEMORY_MB:16384']

    def test_key_ignores_the_order_of_the_queries(self):
        key = objects.Cell0WaitShape.key_of(self.QUERIES)
        self.assertEqual(64, len(key))
        self.assertEqual(key, objects.Cell0WaitShape.key_of(
            list(reversed(self.QUERIES))))
        self.assertNotEqual(key, objects.Cell0WaitShape.key_of(
            self.QUERIES[:1]))

    def test_concurrent_ensures_store_a_shape_once(self):
        outcomes = self._race(
            lambda i: objects.Cell0WaitShape.ensure(self.context,
                                                    self.QUERIES))
        key = objects.Cell0WaitShape.key_of(self.QUERIES)
        self.assertEqual([key] * WORKERS, outcomes)
        with db_api.reader(self.context) as session:
            self.assertEqual(1, session.query(models.Cell0WaitShape).count())

    def test_queries_of_many_shapes_in_one_statement(self):
        shapes = [[q + '&member_of=%d' % i for q in self.QUERIES]
                  for i in range(20)]
        keys = [objects.Cell0WaitShape.ensure(self.context, shape)
                for shape in shapes]
        statements = self._count_statements()
        self.assertEqual({}, objects.Cell0WaitShape.get_queries(
            self.context, []))
        self.assertEqual([], statements)
        found = objects.Cell0WaitShape.get_queries(self.context,
                                                   keys + ['0' * 64])
        self.assertEqual(dict(zip(keys, shapes)), found)
        self.assertEqual(1, len(statements), statements)


class _EpochTest(_Base):

    NAME = 'nova-cell0-rebuild-pending'

    def test_take_and_heartbeat(self):
        self.assertIsNone(objects.PendingEpoch.get(self.context, self.NAME))
        now = _at(0)
        self.assertEqual(1, objects.PendingEpoch.take(
            self.context, self.NAME, 'copy-a', now=now))
        self.assertEqual(2, objects.PendingEpoch.take(
            self.context, self.NAME, 'copy-b', now=now))
        later = _at(1)
        self.assertFalse(objects.PendingEpoch.heartbeat(
            self.context, self.NAME, 1, now=later))
        self.assertTrue(objects.PendingEpoch.heartbeat(
            self.context, self.NAME, 2, now=later))
        # Twice within one second (DATETIME's precision): still current.
        self.assertTrue(objects.PendingEpoch.heartbeat(
            self.context, self.NAME, 2, now=later))
        self.assertFalse(objects.PendingEpoch.heartbeat(
            self.context, 'another-service', 2))
        epoch = objects.PendingEpoch.get(self.context, self.NAME)
        # Each heartbeat changed the row, even in the same second: Galera
        # certifies only a change (see TestPendingWaitsThroughTwoNodes).
        self.assertEqual((2, 'copy-b', later, 2),
                         (epoch.epoch, epoch.holder,
                          _naive(epoch.heartbeat_at), epoch.beats))

    def test_concurrent_takers_get_distinct_epochs(self):
        for existing in (0, WORKERS):
            outcomes = self._race(lambda i: objects.PendingEpoch.take(
                self.context, self.NAME, 'copy-%d' % i))
            self.assertEqual(list(range(existing + 1,
                                        existing + WORKERS + 1)),
                             sorted(outcomes))
            current = objects.PendingEpoch.get(self.context, self.NAME)
            self.assertEqual(max(outcomes), current.epoch)
            beats = [objects.PendingEpoch.heartbeat(self.context, self.NAME,
                                                    epoch)
                     for epoch in outcomes]
            self.assertEqual([max(outcomes)],
                             [e for e, ok in zip(outcomes, beats) if ok])


globals().update(base.backends(_OpenTest))
globals().update(base.backends(_CancelTest))
globals().update(base.backends(_DispatchTest))
globals().update(base.backends(_ShapeTest))
globals().update(base.backends(_EpochTest))
