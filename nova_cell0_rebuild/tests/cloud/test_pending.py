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

"""Waiting for room with the real nova-cell0-rebuild-pending, two copies.

The minicloud runs two copies of the service as processes of their own
(``pending-1``, ``pending-2``: nova.conf, then ``etc/nova/pending.conf``
with the minicloud's redis as coordination URL); one dispatches, the other
stands by. Servers opt in with the ``cell0_rebuild:wait`` metadata key at
create; what the service sends is read from the real RabbitMQ by a
listener of the test's own (``notifications.py``). Spec ``pending``, "Test
plan", cloud job. The figures go to ``$CLOUD_LATENCY_OUTPUT`` under
``pending``.
"""

import re
import statistics
import time

from testtools import content

from nova_cell0_rebuild.tests.cloud import base
from nova_cell0_rebuild.tests.cloud import clients
from nova_cell0_rebuild.tests.cloud import notifications

WAIT_KEY = 'cell0_rebuild:wait'
ELECTED = re.compile(r'This copy \((\S+)\) dispatches waits for room, '
                     r'epoch (\d+)')
DELETE_END = 'instance.delete.end'
WAIT_START = 'cell0_rebuild.wait.start'
WAIT_ATTEMPT = 'cell0_rebuild.wait.attempt'
WAIT_END = 'cell0_rebuild.wait.end'
REBUILD_START = 'cell0_rebuild.rebuild.start'
#: Seconds from a deletion's instance.delete.end to the dispatch of the
#: rebuild it made room for: the median must stay under it.
MEDIAN_LATENCY = 2.0


class PendingTest(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        self.copies = self.cloud.description.get('pending', {}).get(
            'copies')
        if not self.copies:
            self.skipTest('this minicloud runs no nova-cell0-rebuild-pending '
                          '(galera mode has no redis to elect it through)')
        self.watcher = notifications.Watcher(
            self.cloud.description, 'cloud-test-pending')
        self.watcher.start()
        self.addCleanup(self.watcher.stop)
        self.addOnException(self._logs)

    def _logs(self, exc_info):
        for name in self.copies:
            self.addDetail('log ' + name, content.text_content(
                self._log(name)[-6000:]))
        self.addDetail('notifications', content.text_content(
            '\n'.join(map(repr, self.watcher.received))))

    def _log(self, name):
        path = '%s/logs/%s.log' % (self.cloud.workdir, name)
        with open(path, errors='replace') as log:
            return log.read()

    # -- helpers -----------------------------------------------------------

    def bury_waiting(self, name, cloud, deadline='1h'):
        """Create a server on a full cloud (opted in unless *deadline* is
        None); :returns: its id once it is buried.
        """
        extra = {'metadata': {WAIT_KEY: deadline}} if deadline else {}
        uuid, _ = self.create(name, cloud=cloud, **extra)
        server = self.wait_for_status(uuid, 'ERROR', cloud)
        self.assertIn('No valid host', server['fault']['message'])
        return uuid

    def bury_in_order(self, servers):
        """Bury servers one after the other, a second apart at least: the
        order rule reads burial times in whole seconds.

        :param servers: [(name, cloud, deadline)].
        :returns: their ids, in that order.
        """
        uuids = []
        for name, cloud, deadline in servers:
            if uuids:
                time.sleep(max(0.0, int(time.time()) + 1.05 - time.time()))
            uuids.append(self.bury_waiting(name, cloud, deadline))
        return uuids

    def cell0_view(self, uuid, cloud):
        status, answer, _ = self.cloud.compute(
            cloud, 'GET', '/os-cell0-rebuild/servers/%s' % uuid)
        self.assertEqual(200, status, answer)
        return answer['cell0_server']

    def actions(self, uuid, cloud):
        _, answer, _ = self.cloud.compute(
            cloud, 'GET', '/servers/%s/os-instance-actions' % uuid)
        return sorted(action['action']
                      for action in answer['instanceActions'])

    def leader(self):
        """The copy that dispatches: the latest epoch any copy logged."""
        epochs = {}
        for name in self.copies:
            for _, epoch in ELECTED.findall(self._log(name)):
                epochs[int(epoch)] = name
        self.assertTrue(epochs, 'no copy was ever elected')
        return epochs[max(epochs)]

    def queued_order(self, uuids):
        """The servers by the order rule's key: (queued_at, uuid)."""
        starts = {uuid: self.watcher.wait_for(WAIT_START, uuid)[0]
                  for uuid in uuids}
        return sorted(uuids, key=lambda uuid: (
            starts[uuid].data['queued_at'], uuid))

    def record(self, figure, value):
        clients.record_result(['pending', figure], value)

    # -- scenarios ---------------------------------------------------------

    def test_fair_order_and_latency(self):
        """A1, A2, A3 (demo), B1, B2 (other) wait, N (other) does not.

        Three slots freed one at a time: by the rule (oldest burial first
        within a project, projects taking turns, A1 buried first) A1, B1,
        A2 are rebuilt, in that order. Runs on a dispatcher that has not
        served any project yet: the scenarios before it opt nobody in.
        """
        preemptibles = self.fill()
        not_waiting, a1, b1, a2, b2, a3 = self.bury_in_order([
            ('n', 'other-member', None), ('a1', 'demo-member', '1h'),
            ('b1', 'other-member', '1h'), ('a2', 'demo-member', '1h'),
            ('b2', 'other-member', '1h'), ('a3', 'demo-member', '1h')])
        projects = {a1: 'demo-member', a2: 'demo-member',
                    a3: 'demo-member', b1: 'other-member',
                    b2: 'other-member'}
        # Buried in distinct seconds, as created.
        self.assertEqual([a1, a2, a3], self.queued_order([a1, a2, a3]))
        self.assertEqual([b1, b2], self.queued_order([b1, b2]))

        latencies, to_start, rebuilt = [], [], []
        for preemptible in preemptibles[:3]:
            attempts = len(self.watcher.of(WAIT_ATTEMPT))
            self.cloud.compute('demo-member', 'DELETE',
                               '/servers/%s' % preemptible)
            deleted = self.watcher.wait_for(DELETE_END, preemptible)[0]
            attempt = self.watcher.wait_for(
                WAIT_ATTEMPT, count=attempts + 1)[attempts]
            self.assertEqual('dispatched', attempt.data['outcome'],
                             attempt.data)
            start = self.watcher.wait_for(REBUILD_START, attempt.uuid)[-1]
            latencies.append(attempt.sent_at - deleted.sent_at)
            to_start.append(start.sent_at - deleted.sent_at)
            rebuilt.append(attempt.uuid)
            # Settled (the scheduler picked a host) before the next slot.
            self.wait_for_status(attempt.uuid, 'ACTIVE',
                                 projects[attempt.uuid])

        print('pending: delete.end -> wait.attempt (dispatched) %s s, '
              '-> rebuild.start %s s' % (
                  ['%.2f' % s for s in latencies],
                  ['%.2f' % s for s in to_start]))
        self.record('delete_end_to_dispatch_s',
                    [round(s, 2) for s in latencies])
        self.record('delete_end_to_dispatch_median_s',
                    round(statistics.median(latencies), 2))
        self.assertEqual([a1, b1, a2], rebuilt)
        self.assertLessEqual(statistics.median(latencies), MEDIAN_LATENCY,
                             latencies)

        for uuid in rebuilt:
            self.assertEqual(uuid, self.show(uuid, projects[uuid])['id'])
            self.assert_one_allocation(uuid)
            self.assertEqual(['create', 'rebuild'],
                             self.actions(uuid, projects[uuid]))
            ended = self.watcher.wait_for(WAIT_END, uuid)
            self.assertEqual(['rebuilt'],
                             [n.data['reason'] for n in ended])
        for uuid in (a3, b2):
            self.assertEqual('ERROR', self.show(uuid, projects[uuid])[
                'status'])
            wait = self.cell0_view(uuid, projects[uuid])['wait']
            self.assertTrue(wait['waiting'], wait)
            self.assertEqual(0, wait['attempts'], wait)
            self.assertEqual([], self.watcher.of(WAIT_ATTEMPT, uuid))
        # Not opted in: no wait, no attempt, untouched.
        self.assertEqual('ERROR', self.show(not_waiting, 'other-member')[
            'status'])
        self.assertEqual(['create'], self.actions(not_waiting,
                                                  'other-member'))
        wait = self.cell0_view(not_waiting, 'other-member')['wait']
        self.assertFalse(wait and wait.get('waiting'), wait)
        self.assertEqual([], [n for n in self.watcher.received
                              if n.uuid == not_waiting and
                              n.event_type.startswith('cell0_rebuild.')])

    def test_deadline_ends_the_wait(self):
        """A wait of 20 s on a full cloud ends at its deadline: wait.end
        with reason deadline, within the deadline and a sweep (15 s in the
        minicloud); the server stays buried, in ERROR, untouched.
        """
        self.fill()
        uuid = self.bury_waiting('short', 'other-member', '20s')
        self.watcher.wait_for(WAIT_START, uuid)
        (ended,) = self.watcher.wait_for(WAIT_END, uuid, timeout=20 + 15 + 30)
        self.assertEqual('deadline', ended.data['reason'], ended.data)
        deadline = notifications.utc_seconds(ended.data['deadline'])
        self.assertGreaterEqual(ended.sent_at, deadline)
        self.record('deadline_to_wait_end_s', round(
            ended.sent_at - deadline, 1))
        wait = self.cell0_view(uuid, 'other-member')['wait']
        self.assertFalse(wait['waiting'], wait)
        self.assertEqual('deadline', wait['reason_code'], wait)
        self.assertEqual('ERROR', self.show(uuid, 'other-member')['status'])
        self.assertEqual(['create'], self.actions(uuid, 'other-member'))
        self.assertEqual([], self.watcher.of(WAIT_ATTEMPT, uuid))

    def _journal(self, uuids, column='step'):
        """{server: its move's *column*} of the moves journaled."""
        database = self.cloud.database('nova_api')
        try:
            with database.cursor() as cursor:
                cursor.execute(
                    'SELECT instance_uuid, ' + column + ' FROM '
                    'cell0_rebuild_move_journal WHERE instance_uuid IN '
                    '(%s)' % ', '.join(['%s'] * len(uuids)), tuple(uuids))
                return dict(cursor.fetchall())
        finally:
            database.close()

    def test_leader_killed_mid_rebuild(self):
        """kill -9 of the dispatching copy while its rebuild is held after
        the move's claim: the standby takes over through redis, settles
        the dead copy's dispatch, heals the move through rebuild(), and
        nothing is lost: both freed slots are used, each server ACTIVE once
        with one allocation or still waiting, none left in BUILD.
        """
        preemptibles = self.fill()
        waiting = dict(zip(self.bury_in_order([
            ('k1', 'demo-member', '1h'), ('k2', 'other-member', '1h'),
            ('k3', 'demo-member', '1h')]), ('demo-member', 'other-member',
                                            'demo-member')))
        for uuid in waiting:
            self.watcher.wait_for(WAIT_START, uuid)
        killed = self.leader()
        # Hold the rebuild after its claim: a session of ours read-locks
        # the BuildRequests (the move writes one; the deletion below only
        # reads them), so the kill lands mid-rebuild every time.
        lock = self.cloud.database('nova_api')
        self.addCleanup(lock.close)
        with lock.cursor() as cursor:
            cursor.execute('LOCK TABLES build_requests READ')
        self.delete(preemptibles[0])
        deadline = time.monotonic() + 60
        while 'claimed' not in self._journal(list(waiting)).values():
            self.assertLess(time.monotonic(), deadline,
                            'no rebuild claimed its server')
            time.sleep(0.1)
        self.cloud.service('kill', killed)
        killed_at = time.monotonic()
        self.addCleanup(self.cloud.service, 'restart', killed)
        with lock.cursor() as cursor:
            cursor.execute('UNLOCK TABLES')
        self.delete(preemptibles[1])

        deadline = time.monotonic() + 180
        while self.leader() == killed:
            self.assertLess(time.monotonic(), deadline, 'no takeover')
            time.sleep(0.5)
        self.record('kill_to_takeover_s', round(
            time.monotonic() - killed_at, 1))
        while True:
            statuses = {uuid: self.show(uuid, cloud)['status']
                        for uuid, cloud in waiting.items()}
            if sorted(statuses.values()) == ['ACTIVE', 'ACTIVE', 'ERROR']:
                break
            self.assertLess(time.monotonic(), deadline, statuses)
            time.sleep(1)
        self.record('kill_to_both_active_s', round(
            time.monotonic() - killed_at, 1))
        for uuid, cloud in waiting.items():
            server = self.wait_for_status(uuid, statuses[uuid], cloud)
            if statuses[uuid] == 'ACTIVE':
                self.assert_one_allocation(uuid)
                self.assertEqual(['create', 'rebuild'],
                                 self.actions(uuid, cloud))
            else:
                self.assertEqual({}, self.cloud.placement_allocations(uuid))
                wait = self.cell0_view(uuid, cloud)['wait']
                self.assertTrue(wait['waiting'], wait)
            self.assertNotEqual('BUILD', server['status'])
        self.assertNotIn('in_progress', self._journal(
            list(waiting), 'status').values())
