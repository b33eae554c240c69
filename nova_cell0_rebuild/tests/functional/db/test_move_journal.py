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

import eventlet
from nova import context as nova_context

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tests.functional.db import base

INSTANCE = '0b0b4b26-6f7e-4c1c-9a43-0a8f0e6c7d21'
WORKERS = 16


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
                    exception.CreateRecordExists) as exc:
                outcomes.append(type(exc).__name__)
        for i in range(WORKERS):
            pool.spawn_n(attempt, i)
        pool.waitall()
        return sorted(outcomes)

    def test_one_of_many_starts_a_move(self):
        outcomes = self._race(lambda i: objects.MoveJournal.start(
            self.context, INSTANCE, request_id='req-%d' % i))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertEqual((fields.MoveStatus.IN_PROGRESS, 1),
                         (journal.status, journal.attempts))

    def test_one_of_many_restarts_a_finished_move(self):
        objects.MoveJournal.start(self.context, INSTANCE).finish(
            fields.MoveStatus.ROLLED_BACK, error='no capacity')
        outcomes = self._race(lambda i: objects.MoveJournal.start(
            self.context, INSTANCE))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        journal = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
        self.assertEqual(2, journal.attempts)
        self.assertIsNone(journal.last_error)

    def test_one_of_many_advances_a_step(self):
        objects.MoveJournal.start(self.context, INSTANCE)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        outcomes = self._race(lambda i: copies[i].advance(
            fields.MoveStep.BUILD_REQUEST_WRITTEN))
        self.assertEqual(1, outcomes.count('won'), outcomes)

    def test_in_progress_then_stale(self):
        objects.MoveJournal.start(self.context, INSTANCE)
        self.assertRaises(exception.MoveInProgress,
                          objects.MoveJournal.start, self.context, INSTANCE)
        interrupted = self.assertRaises(
            exception.MoveInterrupted, objects.MoveJournal.start,
            self.context, INSTANCE, stale_after=0)
        self.assertEqual(INSTANCE, interrupted.journal.instance_uuid)
        self.assertEqual(
            [INSTANCE], [j.instance_uuid for j in
                         objects.MoveJournal.list_in_progress(self.context)])

    def test_one_of_many_restarts_from_the_journal_it_read(self):
        # A rebuild reads the journal once and hands it to start().
        objects.MoveJournal.start(self.context, INSTANCE).finish(
            fields.MoveStatus.DONE, step=fields.MoveStep.CAST_SENT)
        copies = [objects.MoveJournal.get_by_instance_uuid(self.context,
                                                           INSTANCE)
                  for _ in range(WORKERS)]
        self.assertEqual(fields.MoveStep.CAST_SENT, copies[0].step)
        started = []
        outcomes = self._race(lambda i: started.append(
            objects.MoveJournal.start(self.context, INSTANCE,
                                      request_id='req-%d' % i,
                                      current=copies[i])))
        self.assertEqual(1, outcomes.count('won'), outcomes)
        stored = objects.MoveJournal.get_by_instance_uuid(self.context,
                                                          INSTANCE)
        compared = ('id', 'instance_uuid', 'request_id', 'status', 'step',
                    'attempts', 'last_error', 'fault_message')
        self.assertEqual({key: getattr(stored, key) for key in compared},
                         {key: getattr(started[0], key) for key in compared})
        self.assertEqual((fields.MoveStatus.IN_PROGRESS, 2),
                         (stored.status, stored.attempts))

    def test_stale_only_while_in_progress(self):
        journal = objects.MoveJournal.start(self.context, INSTANCE)
        self.assertFalse(journal.is_stale(60))
        self.assertTrue(journal.is_stale(0))
        journal.finish(fields.MoveStatus.DONE)
        self.assertFalse(journal.is_stale(0))

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
