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

"""nova-cell0-rebuild-pending: when it refuses to start, and a clean stop.

One refusal runs the command as an operator does (a process of its own,
``main()`` of the module: no installed script is needed); the others and
the stop on SIGTERM run in this process, with a real tooz lock (its file
driver) and the epoch row in SQLite.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import fixtures
import nova.conf  # noqa: F401 (registers Nova's [notifications])
from nova import context as nova_context
import oslo_messaging
import sqlalchemy as sa

from nova_cell0_rebuild.cmd import pending
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.tests.unit import base
from nova_cell0_rebuild.tests.unit.pending import test_service


class PendingCommandTest(base.TestCase):
    """The command in a process of its own."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.config = os.path.join(self.tmp, 'nova.conf')

    def _run(self, text):
        with open(self.config, 'w') as conf:
            conf.write('[DEFAULT]\ntransport_url = fake:/\n' + text)
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONWARNINGS'}
        proc = subprocess.run(
            [sys.executable, '-c', 'import sys; from nova_cell0_rebuild.cmd '
             'import pending; sys.exit(pending.main())', '--config-file',
             self.config], capture_output=True, text=True, timeout=120,
            env=env)
        return proc.returncode, proc.stderr

    def _assert_refused(self, wanted, result):
        code, err = result
        self.assertEqual(1, code, err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('%s: error: ' % pending.PROG, err)
        self.assertIn(wanted, err)

    def test_refuses_to_start_when_waits_are_not_enabled(self):
        self._assert_refused(
            '[cell0_rebuild_pending] enabled is false', self._run(''))


class ReadinessTest(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.conf.set_override('enabled', True,
                               group='cell0_rebuild_pending')
        self.conf.set_override('notification_format', 'versioned',
                               group='notifications')
        self.conf.set_override('connection', 'sqlite://',
                               group='api_database')
        pending.notification_drivers(self.conf)
        self.conf.set_override('driver', ['messagingv2'],
                               group='oslo_messaging_notifications')

    def test_ready(self):
        self.assertIsNone(pending.check_ready(self.conf))

    def test_refuses_when_the_tables_are_behind(self):
        # A database of its own, without the plugin's tables.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.db.api._OWN_FACADES', {}))
        self.assertEqual("The plugin's tables do not exist. Run "
                         "nova-cell0-rebuild-manage db sync.",
                         pending.check_ready(self.conf))

    def test_refuses_when_nova_sends_no_notifications(self):
        # oslo.messaging's default: no driver, Nova's notifier is off.
        for drivers in ([], ['noop']):
            self.conf.set_override('driver', drivers,
                                   group='oslo_messaging_notifications')
            self.assertIn('[oslo_messaging_notifications] driver is unset '
                          'or noop', pending.check_ready(self.conf))

    def test_refuses_without_versioned_notifications(self):
        for value in ('unversioned', 'both'):
            self.conf.set_override('notification_format', value,
                                   group='notifications')
            why = pending.check_ready(self.conf)
            if value == 'both':
                self.assertIsNone(why)
            else:
                self.assertIn('Nova sends no versioned notifications', why)


class BuildServiceTest(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.context = nova_context.get_admin_context()
        # Registers [DEFAULT] transport_url; oslo.messaging's fake driver.
        oslo_messaging.get_notification_transport(self.conf).cleanup()
        self.conf.set_override('transport_url', 'fake:/')
        self.url = 'file://' + self.useFixture(fixtures.TempDir()).path
        # The service's work is tested in tests/unit/pending/; here, what
        # starts and stops it.
        self.dispatcher = test_service.FakeDispatcher()
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.pending.dispatcher.Dispatcher',
            return_value=self.dispatcher))

    def _url(self, url):
        self.conf.set_override('coordination_url', url,
                               group='cell0_rebuild_pending')

    def _build(self, holder='host-a:1'):
        service, self.transport = pending.build_service(
            self.conf, self.context, holder=holder)
        self.addCleanup(self.transport.cleanup)
        return service

    def _until(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while not predicate():
            self.assertLess(time.monotonic(), deadline,
                            self.dispatcher.calls)
            time.sleep(0.05)

    def test_nova_notifications_reach_the_worker_through_the_listener(self):
        # oslo.messaging's fake driver, Nova's versioned topic, the
        # service's pool and filter, and its worker thread.
        self._url(self.url)
        service = self._build()
        worker = threading.Thread(target=service.run)
        worker.start()
        self.addCleanup(worker.join, 10)
        self.addCleanup(service.stop)
        self._until(lambda: 'run_pass' in self.dispatcher.calls)
        compute = oslo_messaging.Notifier(
            self.transport, publisher_id='nova-compute:host1',
            driver='messagingv2', topics=['versioned_notifications'])
        compute.info({}, 'instance.delete.end', test_service._payload(
            uuid=test_service.OTHER, host='host1'))
        compute.error({}, 'compute_task.build_instances.error',
                      test_service._payload(
                          'ComputeTaskPayload',
                          instance_uuid=test_service.UUID))
        self._until(lambda: self.dispatcher.passes() == 2 and
                    ('intake', test_service.UUID) in self.dispatcher.calls)

    def test_refuses_when_the_election_cannot_be_tried(self):
        # The second's wording is tooz's own, and changes with its
        # release ("error opening file", "[Errno 2] No such file...").
        for url, wanted in (('nosuch://host', "driver found"),
                            ('file:///proc/forbidden/locks', ': ')):
            self._url(url)
            exc = self.assertRaises(pending._Unusable, self._build)
            self.assertIn('[cell0_rebuild_pending] coordination_url '
                          'cannot be tried', str(exc))
            self.assertIn(wanted, str(exc))

    def test_refuses_when_the_epoch_cannot_be_taken(self):
        with db_api.get_engine().begin() as connection:
            connection.execute(sa.text(
                'DROP TABLE cell0_rebuild_pending_epoch'))
        self._url(self.url)
        exc = self.assertRaises(pending._Unusable, self._build)
        self.assertIn("the dispatcher's epoch cannot be taken: ", str(exc))
        self.assertIn('cell0_rebuild_pending_epoch', str(exc))
        # The lock was released on the way out.
        other = leader.Leadership(self.context, self.url, 'host-b:2')
        other.start()
        self.addCleanup(other.stop)
        self.assertTrue(other._lock.acquire(blocking=False))
        other._lock.release()

    def test_refuses_without_a_url_while_another_copy_beats(self):
        objects.PendingEpoch.take(self.context, leader.NAME, 'host-b:2')
        exc = self.assertRaises(pending._Unusable, self._build)
        self.assertIn('coordination_url is not set', str(exc))

    def test_sigterm_stops_and_releases_the_lock(self):
        self._url(self.url)
        service = self._build()
        self.assertTrue(service.leading)
        for signum in (signal.SIGTERM, signal.SIGINT):
            self.addCleanup(signal.signal, signum, signal.getsignal(signum))
        timer = threading.Timer(
            0.5, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        self.addCleanup(timer.cancel)
        self.assertEqual(pending.SUCCESS,
                         pending.run_until_signalled(service))
        self.assertIn('run_pass', self.dispatcher.calls)
        # The lock is free: another copy is elected at once.
        other = leader.Leadership(self.context, self.url, 'host-b:2')
        other.start()
        self.addCleanup(other.stop)
        self.assertEqual(2, other.elect())


class ExitStatusTest(test_service._ServiceTest):

    def test_a_copy_deposed_without_a_url_exits_with_one(self):
        for signum in (signal.SIGTERM, signal.SIGINT):
            self.addCleanup(signal.signal, signum, signal.getsignal(signum))
        self.leadership.url = None
        service = self._service()
        self.leadership.deposed = True
        self.clock.advance(leader.HEARTBEAT_SECONDS)
        self.assertEqual(pending.ERROR, pending.run_until_signalled(service))
        self.assertTrue(self.leadership.stopped)
