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

"""The relays' ledger of announcements, under concurrency, and its purge.

Run on SQLite, MySQL/MariaDB and PostgreSQL. Workers are green threads;
PyMySQL yields on every round trip, so on MySQL they really interleave.
"""

import datetime

import eventlet
import fixtures
from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import relay_announcement as announcement
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tests.functional.db import base

INSTANCE = '5c1e0f1a-2b3c-4d5e-8f90-a1b2c3d4e5f6'
WORKERS = 12
LEASE = 60


class _Ledger(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()

    def _claim(self, owner, message_id='m1'):
        return objects.RelayAnnouncement.claim(
            self.context, INSTANCE, message_id, owner, LEASE)


class _AnnouncementTest(_Ledger):

    def _race(self, message_id='m1'):
        pool = eventlet.GreenPool(WORKERS)
        outcomes = []
        for i in range(WORKERS):
            pool.spawn_n(lambda i: outcomes.append(
                self._claim('relay-%d' % i, message_id)[0]), i)
        pool.waitall()
        return sorted(outcomes)

    def _age(self, **values):
        """Move the row's times back, as if written long ago."""
        past = timeutils.utcnow() - datetime.timedelta(days=1)
        values = dict({'updated_at': past, 'lease_expires_at': past},
                      **values)
        with db_api.writer(self.context) as session:
            session.query(models.RelayAnnouncement).update(
                values, synchronize_session=False)

    def test_one_of_many_relays_claims_a_burial(self):
        outcomes = self._race()
        self.assertEqual([announcement.CLAIMED] +
                         [announcement.HELD] * (WORKERS - 1), outcomes)

    def test_announced_is_never_claimed_again(self):
        outcome, claim = self._claim('relay-1')
        self.assertTrue(claim.mark_announced())
        self._age()  # whatever the lease says
        self.assertEqual([announcement.ANNOUNCED] * WORKERS, self._race())

    def test_one_of_many_takes_over_an_expired_lease(self):
        self._claim('relay-dead')
        self._age()
        outcomes = self._race()
        self.assertEqual([announcement.HELD] * (WORKERS - 1) +
                         [announcement.TAKEN_OVER], outcomes)

    def test_a_relay_whose_lease_was_taken_cannot_mark_it(self):
        _outcome, slow = self._claim('relay-slow')
        self._age()
        outcome, new = self._claim('relay-2')
        self.assertEqual(announcement.TAKEN_OVER, outcome)
        self.assertEqual(2, new.lease_token)
        self.assertFalse(slow.mark_announced())
        self.assertTrue(new.mark_announced())
        self.assertEqual('announced', new.state)

    def test_another_notification_is_another_burial(self):
        self._claim('relay-1')[1].mark_announced()
        self.assertEqual(announcement.CLAIMED,
                         self._claim('relay-1', message_id='m2')[0])

    def test_purge_keeps_what_a_redelivery_may_still_need(self):
        _outcome, announced = self._claim('relay-1', 'announced')
        announced.mark_announced()
        self._claim('relay-2', 'held')
        now = timeutils.utcnow()
        # Younger than the grace: kept whatever --before says.
        self.assertEqual([], purge.purge_announcements(
            self.context, now + datetime.timedelta(days=1)))
        self._claim('relay-3', 'alive')
        self._age()
        with db_api.writer(self.context) as session:
            # Only "alive" keeps a live lease (its relay announces it now,
            # last written long ago); the others ran out.
            session.query(models.RelayAnnouncement).filter_by(
                message_id='alive').update(
                    {'lease_expires_at': now + datetime.timedelta(hours=2),
                     'updated_at': now - datetime.timedelta(days=1)},
                    synchronize_session=False)
        self.assertEqual([], purge.purge_announcements(
            self.context, now - datetime.timedelta(days=2)))
        expected = ['%s announced' % INSTANCE, '%s held' % INSTANCE]
        self.assertEqual(expected, purge.purge_announcements(
            self.context, now, dry_run=True))
        self.assertEqual(expected, purge.purge_announcements(
            self.context, now))
        with db_api.reader(self.context) as session:
            self.assertEqual(['alive'], [
                row.message_id for row in
                session.query(models.RelayAnnouncement).all()])


class _DeadlockTest(_Ledger):
    """Galera's certification failure (DBDeadlock) is a lost race."""

    def test_deadlock_then_retry_finds_the_winner(self):
        self._claim('relay-1')[1].mark_announced()
        real = announcement.RelayAnnouncement._take_over_in_db
        calls = []

        def certification_failed_once(*args):
            calls.append(args)
            if len(calls) == 1:
                raise db_exc.DBDeadlock('1213')
            return real(*args)
        self.useFixture(fixtures.MockPatchObject(
            announcement.RelayAnnouncement, '_take_over_in_db',
            staticmethod(certification_failed_once)))
        self.assertEqual(announcement.ANNOUNCED, self._claim('relay-2')[0])
        self.assertEqual(2, len(calls))

    def test_deadlock_every_time_is_held(self):
        self.useFixture(fixtures.MockPatchObject(
            announcement.RelayAnnouncement, '_take_over_in_db',
            side_effect=db_exc.DBDeadlock('1213')))
        self._claim('relay-1')
        self.assertEqual((announcement.HELD, None), self._claim('relay-2'))


globals().update(base.backends(_AnnouncementTest))
globals().update(base.backends(_DeadlockTest))
