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

"""Which copy of the pending service dispatches (pending/leader.py).

Real tooz locks (its file driver: copies on one host) and the epoch row on
SQLite, MySQL/MariaDB and PostgreSQL.
"""

import datetime
import logging
import os
import shutil
import socket
import subprocess
import time
from unittest import mock

import fixtures
from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import redis

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.tests.functional.db import base


class RedisServer(fixtures.Fixture):
    """A redis-server of its own, on a free port, for tooz's redis driver.

    Required in CI (NOVA_CELL0_REBUILD_REQUIRE_DBS): never a silent skip.
    """

    def _setUp(self):
        binary = shutil.which('redis-server')
        if binary is None:
            if os.environ.get('NOVA_CELL0_REBUILD_REQUIRE_DBS'):
                raise RuntimeError('redis-server is not installed '
                                   '(tools/ci/setup-services.sh installs it)')
            self.skipped = True
            return
        self.skipped = False
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            self.port = sock.getsockname()[1]
        workdir = self.useFixture(fixtures.TempDir()).path
        process = subprocess.Popen(
            [binary, '--port', str(self.port), '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--dir', workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(process.wait)
        self.addCleanup(process.terminate)
        self.client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.url = 'redis://127.0.0.1:%d' % self.port


class _LeaderTest(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()
        self.url = 'file://' + self.useFixture(fixtures.TempDir()).path
        self.now = timeutils.utcnow().replace(microsecond=0)

    def _copy(self, holder, url=True):
        copy = leader.Leadership(
            self.context, self.url if url else None, holder,
            clock=lambda: self.now)
        copy.start()
        self.addCleanup(copy.stop)
        return copy

    def _later(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)

    def test_one_copy_leads_the_others_stand_by(self):
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        self.assertEqual(1, first.elect())
        self.assertIsNone(second.elect())
        self.assertTrue(first.renew())
        self.assertFalse(second.renew())
        # Electing again changes nothing for the leader.
        self.assertEqual(1, first.elect())
        self.assertEqual(1, objects.PendingEpoch.get(
            self.context, leader.NAME).epoch)

    def test_a_database_error_while_taking_the_epoch_releases_the_lock(self):
        # Elected by the lock while the database fails over: the copy does
        # not lead, and the lock must not stay with it, or no copy (this
        # one included) could ever be elected again.
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        with mock.patch.object(objects.PendingEpoch, 'take',
                               side_effect=db_exc.DBConnectionError()):
            self.assertRaises(db_exc.DBConnectionError, first.elect)
        self.assertFalse(first.leading)
        self.assertEqual(1, second.elect())
        second.stop()
        self.assertEqual(2, first.elect())

    def test_a_refused_heartbeat_is_not_a_deposition(self):
        # PendingEpoch.heartbeat answers False on a DBDeadlock left after
        # its retries (Galera, a lock wait timeout): while the epoch still
        # names this copy, it stays leader and dispatches nothing now.
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        self.assertEqual(1, first.elect())
        with mock.patch.object(objects.PendingEpoch, 'heartbeat',
                               return_value=False):
            self.assertRaises(leader.HeartbeatContended, first.renew)
        self.assertTrue(first.leading)
        self.assertIsNone(second.elect())
        self.assertTrue(first.renew())

    def test_a_copy_that_stops_hands_over_with_a_new_epoch(self):
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        first.elect()
        first.stop()
        self.assertEqual(2, second.elect())
        self.assertEqual('host-b:2', objects.PendingEpoch.get(
            self.context, leader.NAME).holder)

    def test_a_copy_that_lost_its_lock_is_deposed_by_the_epoch(self):
        # Its lock expired while it was paused (redis), and another copy
        # took it: the paused copy still believes it leads until its next
        # renewal, which fails; it then dispatches nothing.
        first = self._copy('host-a:1')
        first.elect()
        elsewhere = leader.Leadership(
            self.context, 'file://' + self.useFixture(
                fixtures.TempDir()).path, 'host-b:2',
            clock=lambda: self.now)
        elsewhere.start()
        self.addCleanup(elsewhere.stop)
        self.assertEqual(2, elsewhere.elect())
        self.assertFalse(first.renew())
        self.assertFalse(first.leading)
        self.assertTrue(elsewhere.renew())
        # The lock it held is released: a third copy of its backend may
        # take it, with a newer epoch again.
        self.assertEqual(3, self._copy('host-c:3').elect())
        self.assertFalse(elsewhere.renew())

    def test_without_a_url_a_second_copy_refuses_while_the_first_beats(
            self):
        first = self._copy('host-a:1', url=False)
        second = self._copy('host-b:2', url=False)
        self.assertEqual(1, first.elect())
        self.assertRaises(leader.AnotherCopyRuns, second.elect)
        self._later(leader.STALE_SECONDS - 1)
        self.assertTrue(first.renew())
        self._later(leader.STALE_SECONDS - 1)
        self.assertRaises(leader.AnotherCopyRuns, second.elect)
        # The first stops beating: the second takes over, and the first,
        # should it wake up, is deposed.
        self._later(leader.STALE_SECONDS)
        self.assertEqual(2, second.elect())
        self.assertFalse(first.renew())

    def test_without_a_url_a_copy_restarted_on_its_host_takes_over(self):
        first = self._copy('host-a:1', url=False)
        first.elect()
        again = self._copy('host-a:2', url=False)
        self.assertEqual(2, again.elect())
        # Were the old process still alive, it is deposed.
        self.assertFalse(first.renew())

    def test_through_redis_an_expired_lock_leaves_the_epoch_to_fence(self):
        server = self.useFixture(RedisServer())
        if server.skipped:
            self.skipTest('redis-server is not installed')
        self.url = server.url
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        self.assertEqual(1, first.elect())
        self.assertIsNone(second.elect())
        # The first copy is paused; its lock's key expires in redis.
        for key in server.client.keys('*'):
            server.client.delete(key)
        self.assertEqual(2, second.elect())
        # Both hold "the" lock for a moment; only the epoch's own acts.
        self.assertFalse(first.renew())
        self.assertTrue(second.renew())

    def test_through_redis_a_standby_stops_without_an_error(self):
        # A standby never held the lock: stopping must not release it.
        # tooz's redis driver logs an ERROR ("Unable to release lock") for
        # a lock not owned, at every clean stop of every standby (seen in
        # the cloud job's logs), and operators alert on ERROR.
        server = self.useFixture(RedisServer())
        if server.skipped:
            self.skipTest('redis-server is not installed')
        self.url = server.url
        log = self.useFixture(fixtures.FakeLogger(
            name='tooz', level=logging.DEBUG))
        first, second = self._copy('host-a:1'), self._copy('host-b:2')
        self.assertEqual(1, first.elect())
        self.assertIsNone(second.elect())
        second.stop()
        self.assertNotIn('Unable to release', log.output)
        self.assertTrue(first.renew())
        # The leader's own stop releases its lock, quietly, for the next.
        first.stop()
        self.assertNotIn('Unable to release', log.output)
        self.assertEqual(2, self._copy('host-c:3').elect())


globals().update(base.backends(_LeaderTest))
