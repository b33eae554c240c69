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

"""Nova's databases on Galera: the writer killed mid-move, two writers.

The move is held at a step deterministically: a session of ours on the
writer (n1) holds a row the next step writes (``SELECT ... FOR UPDATE``:
Galera does not support ``LOCK TABLES`` reliably), the test waits until
the journal or InnoDB shows the move waiting there, then kills n1 with
SIGKILL. HAProxy fails over to a backup, n1 is started again, the move's
lease (10 s) runs out and ``nova-cell0-rebuild-manage heal`` runs. Nothing
may be lost: the same server ends ACTIVE (or is left ERROR in cell0 and
rebuilds to ACTIVE), with one allocation and one instance record; every
answer of the API to a rebuild meanwhile is 202, 409 or 503, never 500.

The figures (failover seconds, statuses seen, seconds to ACTIVE) go to
``$CLOUD_LATENCY_OUTPUT`` (``cloud-galera.json``).
"""

import concurrent.futures
import json
import os
import subprocess
import threading
import time

from nova_cell0_rebuild.tests.cloud import base
from nova_cell0_rebuild.tests.cloud import clients
from nova_cell0_rebuild.tests.cloud_galera import cluster

#: What a rebuild may answer while the writer fails over: accepted, a
#: concurrent move holds it, or the database is away (retry later).
FAILOVER_ANSWERS = (202, 409, 503)
#: The minicloud's move lease (configs.nova_conf) and a margin.
LEASE_WAIT = 11
#: The minicloud's [cell0_rebuild] hand_off_timeout and a margin.
HAND_OFF_TIMEOUT = 32


class Prober(object):
    """POSTs the rebuild of one server every second, from a thread.

    As a client retrying on 409 and 503 does, until one is accepted: after
    a 202 the server is building (or ACTIVE, where Nova's own rebuild
    would accept it again). Every HTTP status it gets (or the curl
    failure) is recorded, with the request's id.
    """

    def __init__(self, test, uuid):
        self.test, self.uuid = test, uuid
        self.answers = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    @property
    def statuses(self):
        return [status for status, _ in self.answers]

    def _post(self):
        cloud = self.test.cloud
        done = subprocess.run(
            ['curl', '-s', '-o', '/dev/null', '-D', '-', '-w',
             '%{http_code}', '-X', 'POST',
             cloud.compute_url() + '/servers/%s/action' % self.uuid,
             '-H', 'X-Auth-Token: ' + cloud.token('demo-member'),
             '-H', 'Content-Type: application/json',
             '-H', 'OpenStack-API-Version: compute ' + clients.MICROVERSION,
             '-d', json.dumps(self.test.rebuild_body())],
            capture_output=True, text=True, timeout=300, check=True)
        headers, _, status = done.stdout.rpartition('\n')
        request_id = None
        for line in headers.splitlines():
            name, _, value = line.partition(':')
            if name.lower() == 'x-openstack-request-id':
                request_id = value.strip()
        return int(status), request_id

    def _run(self):
        while not self._stop.is_set():
            try:
                answer = self._post()
            except (subprocess.SubprocessError, ValueError) as error:
                answer = ('curl: %s' % type(error).__name__, None)
            self.answers.append(answer)
            if answer[0] == 202:
                return
            self._stop.wait(1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(120)


def novas_own_500(cloud, request_id):
    """Whether a 500 came from Nova's rebuild, the filter passing it on.

    A rebuild of a server the plugin does not handle (a BuildRequest of a
    move still in its lease, a server in a cell) is Nova's: Nova's
    controller answers a database error with 500 ("Unexpected exception
    in API method"), as it does for any request during a failover.
    """
    if not request_id:
        return False
    with open(os.path.join(cloud.workdir, 'logs', 'nova-api-1.log')) as log:
        lines = [line for line in log if request_id in line]
    return any('Unexpected exception in API method' in line
               for line in lines) and not any(
        'nova_cell0_rebuild' in line for line in lines)


class GaleraTestCase(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        # Fails (never skips) when the cloud has no cluster.
        self.cluster = cluster.Cluster(self.cloud)
        self.cluster.wait_haproxy({'n1': 'UP', 'n2': 'UP', 'n3': 'UP'})
        self.cluster.make_probe_table()

    def _warm(self, api):
        # A cold worker spends seconds on its first token validation.
        for _ in range(4):
            self.cloud.curl('demo-member', 'GET', '/servers', api=api)

    def buried_with_room(self):
        uuid, preemptibles = self.full_cloud_with_a_buried_server()
        self.delete(preemptibles[0])
        self._warm('nova-api-1')
        return uuid

    def assert_one_build(self, uuid):
        """Exactly one allocation, one live instance record, in cell1."""
        self.assert_one_allocation(uuid)
        self.assertEqual({'nova_cell0': 0, 'nova_cell1': 1},
                         self.cluster.instance_rows(uuid))


class WriterKilledTest(GaleraTestCase):
    """kill -9 of the writer node at each step of a move, then heal."""

    def _kill_writer_while_held(self, uuid, hold, until):
        """Rebuild with the move held by *hold*, kill n1 once *until*.

        :returns: the figures of the failover.
        """
        figures = {}
        locks = []
        self.addCleanup(lambda: [cluster.close_quietly(c) for c in locks])
        hold(locks)
        pool = concurrent.futures.ThreadPoolExecutor(1)
        self.addCleanup(pool.shutdown)
        posted = time.monotonic()
        answer = pool.submit(self.rebuild, uuid)
        deadline = time.monotonic() + 60
        while not until(locks):
            self.assertLess(time.monotonic(), deadline,
                            'the move never reached its hold: journal %s, '
                            'transactions on n1 %s' % (
                                self.cluster.journal_step(uuid),
                                self.cluster.transactions()))
            self.assertFalse(answer.done(), answer.result()
                             if answer.done() else None)
            time.sleep(0.2)
        figures['journal_at_kill'] = list(self.cluster.journal_step(uuid))
        with Prober(self, uuid) as prober:
            self.cluster.kill(1)
            figures['failover_s'] = self.cluster.seconds_to_write()
            status, body = answer.result(timeout=180)
            figures['held_request'] = status
            self.assertIn(status, FAILOVER_ANSWERS, body)
            self.cluster.start(1)
            self.cluster.wait_haproxy({'n1': 'UP'})
        self._check_probes(prober, figures)
        self._heal_and_finish(uuid, posted, figures)
        return figures

    def _check_probes(self, prober, figures):
        """202, 409 or 503 from the plugin; Nova's own 500s counted apart."""
        figures['probes'] = prober.statuses
        figures['novas_own_500'] = 0
        for status, request_id in prober.answers:
            if status == 500 and novas_own_500(self.cloud, request_id):
                figures['novas_own_500'] += 1
                continue
            self.assertIn(status, FAILOVER_ANSWERS, prober.answers)

    def _heal_and_finish(self, uuid, posted, figures):
        """Heal once the lease ran out; then the same server, ACTIVE, once."""
        time.sleep(LEASE_WAIT)
        heal = self.cloud.manage('heal')
        figures['heal'] = heal.stdout.strip().splitlines()[-3:]
        server = self._settled(uuid)
        figures['after_heal'] = server['status']
        if server['status'] == 'ERROR':
            # Rolled back: still buried in cell0, rebuildable again.
            self.assertEqual({'nova_cell0': 1, 'nova_cell1': 0},
                             self.cluster.instance_rows(uuid))
            status, body = self.rebuild(uuid)
            self.assertEqual(202, status, body)
        self.wait_for_status(uuid, 'ACTIVE', timeout=180)
        figures['to_active_s'] = round(time.monotonic() - posted, 1)
        self.assert_one_build(uuid)
        self.assertEqual(uuid, self.show(uuid)['id'])

    def _settled(self, uuid, timeout=180, still_building_ok=False):
        """The server once it is ACTIVE or ERROR with no task running.

        :param still_building_ok: at *timeout*, return the server as it
            is (Nova may leave it in BUILD) instead of failing the test.
        """
        deadline = time.monotonic() + timeout
        while True:
            server = self.show(uuid)
            if server['status'] in ('ACTIVE', 'ERROR') and server.get(
                    'OS-EXT-STS:task_state') is None:
                return server
            if still_building_ok and time.monotonic() > deadline:
                return server
            self.assertLess(time.monotonic(), deadline,
                            '%s is %s (task %s) after heal' % (
                                uuid, server['status'],
                                server.get('OS-EXT-STS:task_state')))
            time.sleep(1)

    def _record(self, scenario, figures):
        clients.record_result(['writer_killed', scenario], figures)

    def _journal_at(self, uuid, step):
        return lambda locks: (
            self.cluster.journal_step(uuid) or (None,))[0] == step

    def test_writer_killed_at_the_claim(self):
        uuid = self.buried_with_room()
        # The journal is started (step claimed); the claim's UPDATE of the
        # cell0 instance waits for our lock.
        figures = self._kill_writer_while_held(
            uuid, lambda locks: locks.append(self.cluster.lock_row(
                'nova_cell0', 'instances', 'uuid', uuid)),
            lambda locks: self.cluster.waiting_on_lock('UPDATE instances'))
        self._record('at_the_claim', figures)

    def test_writer_killed_after_the_build_request(self):
        uuid = self.buried_with_room()
        # The BuildRequest is committed (step build_request_written); the
        # hard delete waits for the cell0 info cache row, its first row.
        figures = self._kill_writer_while_held(
            uuid, lambda locks: locks.append(self.cluster.lock_row(
                'nova_cell0', 'instance_info_caches', 'instance_uuid',
                uuid)),
            self._journal_at(uuid, 'build_request_written'))
        self._record('after_the_build_request', figures)

    def test_writer_killed_during_the_cell0_hard_delete(self):
        uuid = self.buried_with_room()
        # The hard delete has removed the security groups, info cache,
        # metadata and faults (uncommitted) and waits for the cell0
        # instance_extra row, whose DELETE carries its compare-and-swap.
        figures = self._kill_writer_while_held(
            uuid, lambda locks: locks.append(self.cluster.lock_row(
                'nova_cell0', 'instance_extra', 'instance_uuid', uuid)),
            lambda locks: self.cluster.waiting_on_lock(
                'DELETE FROM instance_extra'))
        self._record('during_the_cell0_hard_delete', figures)

    def test_writer_killed_after_the_hand_off(self):
        """Killed right after the 202, while the scheduler and conductor
        work: from the hand-off on, the server is in Nova's create
        pipeline, and what the failover does to it is Nova's first.

        Measured: the scheduler's placement call or the conductor's own
        database fails, and the conductor's cast ends without burying the
        server: Nova leaves it in BUILD (task scheduling) as a
        BuildRequest, as it leaves a create at that moment. Once the
        hand-off is older than ``[cell0_rebuild] hand_off_timeout`` (30 s
        in the minicloud), heal buries it in cell0 again, and it is
        rebuilt to ACTIVE. In another run the burial worked (ERROR in
        cell0, rebuilt to ACTIVE): by NoValidHost, or by the conductor's
        own DBConnectionError (gate ``fault`` lets an outage through), or
        the build failed on the compute
        (its conductor's connection cut when n1 came back: HAProxy's
        shutdown-backup-sessions): ERROR in cell1, Nova's own, which is
        deleted and must leave nothing allocated. Never lost, never built
        twice.
        """
        uuid = self.buried_with_room()
        posted = time.monotonic()
        status, body = self.rebuild(uuid)
        self.assertEqual(202, status, body)
        figures = {'held_request': status}
        with Prober(self, uuid) as prober:
            self.cluster.kill(1)
            figures['failover_s'] = self.cluster.seconds_to_write()
            self.cluster.start(1)
            self.cluster.wait_haproxy({'n1': 'UP'})
        self._check_probes(prober, figures)
        time.sleep(LEASE_WAIT)
        # Right after the failover heal may find the conductor still at
        # work (an instance row in a cell, the BuildRequest not yet gone)
        # and leave it alone, exit 3: recorded; the outcome is asserted.
        heal = self.cloud.manage('heal', check=False)
        figures['first_heal'] = [heal.returncode] + (
            heal.stdout.strip().splitlines()[-2:])
        self.assertIn(heal.returncode, (0, 3), heal)
        server = self._settled(uuid, timeout=90, still_building_ok=True)
        rows = self.cluster.instance_rows(uuid)
        figures['after_heal'] = [server['status'], rows]
        self.assertEqual(uuid, server['id'])
        self.assertLessEqual(sum(rows.values()), 1, rows)
        self.assertLessEqual(
            len(self.cloud.placement_allocations(uuid)), 1)
        if server['status'] == 'BUILD':
            # The conductor dropped the hand-off: heal once it timed out.
            time.sleep(max(0, posted + HAND_OFF_TIMEOUT - time.monotonic()))
            heal = self.cloud.manage('heal')
            figures['dropped_hand_off_heal'] = (
                heal.stdout.strip().splitlines()[-2:])
            server = self._settled(uuid)
            self.assertEqual(('ERROR', {'nova_cell0': 1, 'nova_cell1': 0}),
                             (server['status'],
                              self.cluster.instance_rows(uuid)))
            self.assertEqual({}, self.cloud.placement_allocations(uuid))
        if server['status'] == 'ACTIVE' or self.cluster.instance_rows(
                uuid)['nova_cell0']:
            self._heal_and_finish(uuid, posted, figures)
            figures['outcome'] = 'ACTIVE'
        else:
            figures['outcome'] = ('left by Nova in %s (cells %s)'
                                  % (server['status'], rows))
            self.delete(uuid)
            self.assertEqual({}, self.cloud.placement_allocations(uuid))
        self._record('after_the_hand_off', figures)


class MultiWriterTest(GaleraTestCase):
    """nova-api-1 writes through HAProxy (n1), nova-api-2 through n2."""

    ROUNDS = 3
    RACERS = ('nova-api-1', 'nova-api-2', 'nova-api-1', 'nova-api-2')

    def test_racing_rebuilds_through_two_nodes(self):
        preemptibles = self.fill()
        self._warm('nova-api-1')
        self._warm('nova-api-2')
        rounds = []
        for index in range(self.ROUNDS):
            uuid = self.bury('buried-%d' % index)
            self.delete(preemptibles[index])
            barrier = threading.Barrier(len(self.RACERS))

            def race(api):
                barrier.wait()
                return self.rebuild(uuid, api=api)

            with concurrent.futures.ThreadPoolExecutor(
                    len(self.RACERS)) as pool:
                answers = list(pool.map(race, self.RACERS))
            statuses = sorted(status for status, _ in answers)
            rounds.append(statuses)
            self.assertEqual([202] + [409] * (len(self.RACERS) - 1),
                             statuses, answers)
            for status, body in answers:
                if status == 409:
                    self.assertIn('conflictingRequest', body, answers)
            self.wait_for_status(uuid, 'ACTIVE', timeout=180)
            self.assert_one_build(uuid)
        clients.record_result(['multi_writer', 'rounds'], rounds)
