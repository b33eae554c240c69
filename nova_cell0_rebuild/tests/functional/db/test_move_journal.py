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

"""The journal's compare-and-swap and the record table, under concurrency.

Run on SQLite, MySQL/MariaDB and PostgreSQL. The functional tests run with
eventlet, so the workers below are green threads; PyMySQL yields on every
round trip, so on MySQL they really interleave.
"""

import datetime
from unittest import mock

import eventlet
from nova import context as nova_context
from oslo_utils import timeutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tests.functional.db import base

INSTANCE = '0b0b4b26-6f7e-4c1c-9a43-0a8f0e6c7d21'
WORKERS = 16
LEASE = 300


def start(context, **kwargs):
    return objects.MoveJournal.start(context, INSTANCE, LEASE, **kwargs)


def expire(context, lease_expires_at=True):
    """Let the journal's lease run out, as if its holder stopped long ago.

    :param lease_expires_at: also move its expiry back (False: leave it,
        e.g. NULL as a holder older than leases leaves it).
    """
    past = timeutils.utcnow() - datetime.timedelta(days=1)
    values = {'updated_at': past}
    if lease_expires_at:
        values['lease_expires_at'] = past
    with db_api.writer(context) as session:
        session.query(models.MoveJournal).filter_by(
            instance_uuid=INSTANCE).update(values,
                                           synchronize_session=False)


class _JournalTest(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()

    def _race(self, work):
        pool = eventlet.GreenPool(WORKERS)
        outcomes = []

        def attempt(i):
            try:
                work(i)
                outcomes.append('won')
            except (exception.MoveInProgress, exception.JournalConflict,
                    exception.CreateRecordExists,
                    exception.LeaseHeld) as exc:
                outcomes.append(type(exc).__name__)
        for i in range(WORKERS):
            pool.spawn_n(attempt, i)
        pool.waitall()
        return sorted(outcomes)

    def test_one_of_many_starts_a_move(self):
        outcomes = self._race(lambda i: start(self.context,
                                              request_id='req-%d' % i))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertEqual((fields.MoveStatus.IN_PROGRESS, 1),
                         (journal.status, journal.attempts))

    def test_one_of_many_restarts_a_finished_move(self):
        start(self.context).finish(
            fields.MoveStatus.ROLLED_BACK, error='no capacity')
        outcomes = self._race(lambda i: start(self.context))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertEqual(2, journal.attempts)
        self.assertIsNone(journal.last_error)

    def test_one_of_many_advances_a_step(self):
        start(self.context)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        outcomes = self._race(lambda i: copies[i].advance(
            fields.MoveStep.BUILD_REQUEST_WRITTEN))
        self.assertEqual(1, outcomes.count('won'), outcomes)

    def test_a_delete_and_a_step_never_both_win(self):
        # The DELETE path takes the journal from the step it read; a move
        # recording its next step from the same read loses, or wins and
        # the DELETE sees the new step. A heartbeat changes neither.
        start(self.context)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        copies[0].heartbeat()

        def delete_or_advance(i):
            if i % 2:
                copies[i].destroy_if_unchanged()
            else:
                copies[i].advance(fields.MoveStep.BUILD_REQUEST_WRITTEN)
        outcomes = self._race(delete_or_advance)
        self.assertEqual(1, outcomes.count('won'), outcomes)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        if journal is not None:
            self.assertEqual(fields.MoveStep.BUILD_REQUEST_WRITTEN,
                             journal.step)
            journal.destroy_if_unchanged()
        self.assertIsNone(objects.MoveJournal.get_by_instance_uuid(
            self.context, INSTANCE))

    def test_in_progress_then_expired(self):
        start(self.context)
        self.assertRaises(exception.MoveInProgress, start, self.context)
        self.assertEqual([], objects.MoveJournal.list_expired(self.context,
                                                              LEASE))
        expire(self.context)
        interrupted = self.assertRaises(exception.MoveInterrupted, start,
                                        self.context)
        self.assertEqual(INSTANCE, interrupted.journal.instance_uuid)
        self.assertEqual(
            [INSTANCE], [j.instance_uuid for j in
                         objects.MoveJournal.list_expired(self.context,
                                                          LEASE)])

    def test_a_row_without_lease_expires_when_not_updated(self):
        # Written by a plugin older than leases: no expiry of its own.
        start(self.context)
        with db_api.writer(self.context) as session:
            session.query(models.MoveJournal).update(
                {'lease_expires_at': None}, synchronize_session=False)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertFalse(journal.lease_expired(LEASE))
        expire(self.context, lease_expires_at=False)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertTrue(journal.lease_expired(LEASE))

    def test_the_holders_own_expiry_counts_too(self):
        # A holder with a longer lease than the reader's is still alive.
        objects.MoveJournal.start(self.context, INSTANCE, 3 * LEASE)
        past = timeutils.utcnow() - datetime.timedelta(seconds=2 * LEASE)
        with db_api.writer(self.context) as session:
            session.query(models.MoveJournal).update(
                {'updated_at': past}, synchronize_session=False)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertFalse(journal.lease_expired(LEASE))
        self.assertEqual([], objects.MoveJournal.list_expired(self.context,
                                                              LEASE))
        self.assertRaises(exception.LeaseHeld, journal.take_over, 'heal',
                          LEASE)

    def test_an_alive_lease_cannot_be_taken_over(self):
        holder = start(self.context, owner='api-1')
        copy = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                        INSTANCE)
        self.assertRaises(exception.LeaseHeld, copy.take_over, 'heal',
                          LEASE)
        holder.advance(fields.MoveStep.BUILD_REQUEST_WRITTEN)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(('api-1', holder.lease_token),
                         (stored.owner, stored.lease_token))

    def test_one_of_many_takes_over_an_expired_lease(self):
        start(self.context)
        expire(self.context)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        outcomes = self._race(
            lambda i: copies[i].take_over('heal-%d' % i, LEASE))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        self.assertEqual(WORKERS - 1, outcomes.count('LeaseHeld'))

    def test_a_holder_that_lost_its_lease_is_fenced_off(self):
        holder = start(self.context, owner='api-1')
        expire(self.context)
        healer = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        healer.take_over('heal', LEASE)
        self.assertEqual(holder.lease_token + 1, healer.lease_token)
        # Every write of the former holder fails from now on.
        for write in (holder.heartbeat,
                      lambda: holder.advance(
                          fields.MoveStep.BUILD_REQUEST_WRITTEN),
                      lambda: holder.record_error('late'),
                      lambda: holder.finish(fields.MoveStatus.DONE)):
            self.assertRaises(exception.JournalConflict, write)
        healer.finish(fields.MoveStatus.ROLLED_BACK, error='healed')
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(
            ('heal', fields.MoveStatus.ROLLED_BACK, fields.MoveStep.CLAIMED),
            (stored.owner, stored.status, stored.step))

    def test_writes_renew_the_lease(self):
        holder = start(self.context)
        expire(self.context)
        # Expired but not taken over: the holder's heartbeat renews it.
        holder.heartbeat()
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertFalse(stored.lease_expired(LEASE))
        self.assertGreater(stored.lease_expires_at.replace(tzinfo=None),
                           timeutils.utcnow())

    def test_every_fenced_write_changes_the_row(self):
        # Even a heartbeat in the same second as the write before it (the
        # DATETIME columns keep whole seconds): Galera certifies only a
        # write-set, and an UPDATE that changes nothing has none, so on a
        # node that had not yet applied another actor's take-over or the
        # server's DELETE a no-op heartbeat would pass its fence.
        holder = start(self.context)
        moment = timeutils.utcnow().replace(microsecond=0)
        with mock.patch.object(timeutils, 'utcnow', return_value=moment):
            holder.heartbeat()
            before = self._beats()
            holder.heartbeat()
            holder.heartbeat()
            holder.record_error('noted')
        self.assertEqual(before + 3, self._beats())

    def _beats(self):
        with db_api.reader(self.context) as session:
            return session.query(models.MoveJournal.beats).filter_by(
                instance_uuid=INSTANCE).scalar()

    def test_one_of_many_restarts_from_the_journal_it_read(self):
        # A rebuild reads the journal once and hands it to start().
        start(self.context).finish(
            fields.MoveStatus.DONE, step=fields.MoveStep.CAST_SENT)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        self.assertEqual(fields.MoveStep.CAST_SENT, copies[0].step)
        started = []
        outcomes = self._race(lambda i: started.append(
            start(self.context, request_id='req-%d' % i,
                  current=copies[i])))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        compared = ('id', 'instance_uuid', 'request_id', 'status', 'step',
                    'attempts', 'last_error', 'fault_message', 'owner',
                    'lease_token')
        self.assertEqual({key: getattr(stored, key) for key in compared},
                         {key: getattr(started[0], key) for key in compared})
        self.assertEqual((fields.MoveStatus.IN_PROGRESS, 2),
                         (stored.status, stored.attempts))

    def test_expired_only_while_in_progress(self):
        journal = start(self.context)
        self.assertFalse(journal.lease_expired(LEASE))
        expire(self.context)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertTrue(journal.lease_expired(LEASE))
        journal.take_over('heal', LEASE)
        journal.finish(fields.MoveStatus.DONE)
        expire(self.context)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertFalse(journal.lease_expired(LEASE))

    def _handed_off(self, seconds_ago):
        """A move done (its cast sent) *seconds_ago*."""
        journal = start(self.context, owner='api-1')
        journal.advance(fields.MoveStep.CASTING)
        journal.finish(fields.MoveStatus.DONE,
                       step=fields.MoveStep.CAST_SENT)
        past = timeutils.utcnow() - datetime.timedelta(seconds=seconds_ago)
        with db_api.writer(self.context) as session:
            session.query(models.MoveJournal).filter_by(
                instance_uuid=INSTANCE).update({'finished_at': past},
                                               synchronize_session=False)
        return timeutils.utcnow() - datetime.timedelta(seconds=60)

    def _handed_off_before(self, cutoff):
        return objects.MoveJournal.list_handed_off_before(
            self.context, cutoff, [INSTANCE])

    def test_only_hand_offs_older_than_the_cutoff_are_listed(self):
        cutoff = self._handed_off(seconds_ago=30)
        self.assertEqual([], self._handed_off_before(cutoff))
        cutoff = self._handed_off(seconds_ago=61)
        self.assertEqual([INSTANCE], [journal.instance_uuid for journal
                                      in self._handed_off_before(cutoff)])
        # A move left at casting is not one: its cast may leave later.
        start(self.context).advance(fields.MoveStep.CASTING)
        expire(self.context)
        self.assertEqual([], self._handed_off_before(cutoff))

    def test_one_of_many_reopens_a_dropped_hand_off(self):
        cutoff = self._handed_off(seconds_ago=61)
        copies = [self._handed_off_before(cutoff)[0]
                  for _ in range(WORKERS)]
        outcomes = self._race(lambda i: copies[i].reopen(
            'heal-%d' % i, LEASE, cutoff, 'dropped'))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        self.assertEqual(WORKERS - 1, outcomes.count('LeaseHeld'))
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(
            (fields.MoveStatus.IN_PROGRESS,
             fields.MoveStep.CELL0_ROWS_REMOVED, 'dropped', None),
            (stored.status, stored.step, stored.last_error,
             stored.finished_at))
        self.assertFalse(stored.lease_expired(LEASE))
        # Reopened: no longer a hand-off, and the new holder's lease
        # fences the readers of the old journal.
        self.assertEqual([], self._handed_off_before(cutoff))
        self.assertRaises(exception.LeaseHeld, copies[0].reopen, 'heal',
                          LEASE, cutoff, 'dropped')

    def test_a_new_move_wins_over_a_stale_reopen(self):
        cutoff = self._handed_off(seconds_ago=61)
        stale = self._handed_off_before(cutoff)[0]
        # The server was rebuilt again meanwhile (after a burial by Nova).
        start(self.context, owner='api-2')
        self.assertRaises(exception.LeaseHeld, stale.reopen, 'heal', LEASE,
                          cutoff, 'dropped')
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(('api-2', fields.MoveStep.CLAIMED),
                         (stored.owner, stored.step))

    def _deleted_after_hand_off_before(self, cutoff):
        return [journal.instance_uuid for journal in
                objects.MoveJournal.list_deleted_after_hand_off_before(
                    self.context, cutoff)]

    def test_a_delete_during_the_cast_fences_its_holder_off(self):
        # The DELETE of a server whose holder is inside the cast keeps
        # the journal, done and marked; the holder's next write fails.
        holder = start(self.context, owner='api-1')
        holder.advance(fields.MoveStep.CASTING)
        read = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                        INSTANCE)
        self.assertTrue(read.may_be_cast())
        read.keep_after_delete()
        self.assertRaises(exception.JournalConflict, holder.finish,
                          fields.MoveStatus.DONE,
                          step=fields.MoveStep.CAST_SENT)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(
            (fields.MoveStatus.DONE, fields.MoveStep.CASTING, True,
             holder.lease_token + 1),
            (stored.status, stored.step, stored.deleted_after_hand_off(),
             stored.lease_token))
        self.assertIsNotNone(stored.finished_at)
        # Listed once the timeout counted from then passed.
        self.assertEqual([], self._deleted_after_hand_off_before(
            stored.finished_at - datetime.timedelta(seconds=1)))
        self.assertEqual([INSTANCE], self._deleted_after_hand_off_before(
            stored.finished_at))

    def test_one_of_a_delete_and_a_step_wins_after_the_cast(self):
        start(self.context, owner='api-1').advance(fields.MoveStep.CASTING)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]

        def keep_or_finish(i):
            if i % 2:
                copies[i].keep_after_delete()
            else:
                copies[i].finish(fields.MoveStatus.DONE,
                                 step=fields.MoveStep.CAST_SENT)
        outcomes = self._race(keep_or_finish)
        self.assertEqual(1, outcomes.count('won'), outcomes)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(fields.MoveStatus.DONE, stored.status)
        if stored.deleted_after_hand_off():
            self.assertEqual(fields.MoveStep.CASTING, stored.step)
        else:
            # The DELETE then reads the hand-off and keeps it, its time
            # that of the cast.
            cast_at = stored.finished_at
            stored.keep_after_delete()
            self.assertEqual(cast_at, objects.MoveJournal.
                             get_by_instance_uuid(self.context, INSTANCE).
                             finished_at)

    def test_an_unfenced_keep_marks_whatever_the_row_became(self):
        start(self.context, owner='api-1').advance(fields.MoveStep.CASTING)
        read = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                        INSTANCE)
        holder = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        holder.finish(fields.MoveStatus.DONE,
                      step=fields.MoveStep.CAST_SENT)
        self.assertRaises(exception.JournalConflict, read.keep_after_delete)
        read.keep_after_delete(fenced=False)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        self.assertEqual(
            (fields.MoveStatus.DONE, fields.MoveStep.CAST_SENT, True,
             holder.lease_token + 1),
            (stored.status, stored.step, stored.deleted_after_hand_off(),
             stored.lease_token))

    def test_hand_offs_of_live_servers_are_not_listed_as_deleted(self):
        cutoff = self._handed_off(seconds_ago=61)
        self.assertEqual([], self._deleted_after_hand_off_before(cutoff))
        self._handed_off_before(cutoff)[0].keep_after_delete()
        self.assertEqual([INSTANCE],
                         self._deleted_after_hand_off_before(cutoff))
        # Nor is a move that never cast, whatever its last error says.
        self.assertFalse(start(self.context).may_be_cast())

    def test_one_record_per_request(self):
        def create(i):
            objects.CreateRecord(
                self.context, request_id='req-same',
                status=fields.CreateRecordStatus.PENDING,
                project_id='p', user_id='u', microversion='2.1',
                personality_files=0, requested_networks=None).create()
        outcomes = self._race(create)
        self.assertEqual(1, outcomes.count('won'), outcomes)
        self.assertEqual(WORKERS - 1, outcomes.count('CreateRecordExists'))


globals().update(base.backends(_JournalTest))
