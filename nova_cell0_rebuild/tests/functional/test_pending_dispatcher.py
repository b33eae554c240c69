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

"""The pending dispatcher driven by calls, on real Nova in one process.

Servers are buried for want of a compute (no compute runs at first); a
compute of SmallFakeDriver (2 VCPU, allocation ratios 1.0) is the room
that appears. Placement is the real placement fixture; its ``GET
/allocation_candidates`` are counted at Nova's report client.
"""

import copy
import datetime
import time

import eventlet
import fixtures as fixtures_lib
from nova.scheduler.client import report
from oslo_config import cfg
from oslo_utils import timeutils

from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild.notifications import sender
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults
from nova_cell0_rebuild.tests.functional import test_move_lease

CONF = cfg.CONF
BURIAL = 'compute_task.build_instances.error'


class _PendingTestBase(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.flags(compute_driver='fake.SmallFakeDriver')
        self.flags(cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                   disk_allocation_ratio=1.0)
        self.flags(notification_format='versioned', group='notifications')
        self.flags(enabled=True, group='cell0_rebuild_pending')
        self.admin_api.post_flavor({'flavor': {
            'name': 'big', 'id': 'big', 'vcpus': 4, 'ram': 512,
            'disk': 1}})
        self.api_a = self._client('user-a', 'project-a', ['member'])
        self.api_b = self._client('user-b', 'project-b', ['member'])
        self.dispatcher = dispatcher_mod.Dispatcher(
            CONF, self.admin_context, 'test-dispatcher')
        self.candidate_queries = []
        real_get = report.SchedulerReportClient.get

        def counting_get(client, url, *args, **kwargs):
            if url.startswith('/allocation_candidates'):
                self.candidate_queries.append(url)
            return real_get(client, url, *args, **kwargs)
        self.useFixture(fixtures_lib.MonkeyPatch(
            'nova.scheduler.client.report.SchedulerReportClient.get',
            counting_get))

    # Helpers.

    def _bury(self, api, opt_in='1h', **server):
        """A server buried at its create; opted in with the metadata key
        (the create capture records it) unless *opt_in* is None.
        """
        if opt_in:
            server['metadata'] = {wait_opt_in.METADATA_KEY: opt_in}
        buried = self._create_buried_server(api=api, **server)
        record = objects.CreateRecord.get_for_instance(self.admin_context,
                                                       buried['id'])
        self.assertEqual((opt_in, None),
                         (record.wait_deadline, record.wait_refusal))
        return buried

    def _wait(self, server_id):
        return objects.Cell0Wait.get_by_instance_uuid(self.admin_context,
                                                      server_id)

    def _ours(self, event_type):
        self.assertTrue(sender.SENDER.wait_until_idle(10))
        return [n['payload']['nova_object.data']
                for n in self.notifier.versioned_notifications
                if n['event_type'] == event_type]

    def _settle_all(self, timeout=60):
        """Settle our rebuilds as their outcomes show; {uuid: signal}."""
        settled = {}
        deadline = time.monotonic() + timeout
        while self.dispatcher.in_flight:
            settled.update(self.dispatcher.settle_in_flight())
            if time.monotonic() > deadline:
                self.fail('not settled: %s' % self.dispatcher.in_flight)
            time.sleep(0.2)
        return settled

    def _status(self, server):
        return self.admin_api.get_server(server['id'])['status']

    def _allocations(self, server_id):
        return self.placement.get(
            '/allocations/%s' % server_id).body['allocations']

    def _actions(self, server_id):
        return [a['action'] for a in
                self.admin_api.get_instance_actions(server_id)]


class PendingDispatcherTest(_PendingTestBase):

    def test_room_for_two_rebuilds_the_two_the_order_names(self):
        a1 = self._bury(self.api_a)
        a2 = self._bury(self.api_a)
        b1 = self._bury(self.api_b)
        b2 = self._bury(self.api_b, flavorRef='big')
        opened = self.dispatcher.sweep_intake()
        self.assertEqual({a1['id'], a2['id'], b1['id'], b2['id']},
                         {w.instance_uuid for w in opened})
        # Oldest burial first, ties (one second: the column's precision)
        # broken by uuid, as the rule says.
        a1, a2 = sorted((a1, a2), key=lambda server: (
            self._wait(server['id']).queued_at, server['id']))

        del self.candidate_queries[:]  # the scheduler's, at the burials
        report_ = self.dispatcher.run_pass()
        self.assertEqual([], report_.dispatched)
        # Two shapes (m1.tiny, big): one query each.
        self.assertEqual(2, report_.queries)
        self.assertEqual(2, len(self.candidate_queries))
        wait = self._wait(a1['id'])
        self.assertEqual(('waiting', 'no_candidate', 0),
                         (wait.state, wait.reason_code, wait.attempts))
        self.assertIn('placement has no candidate', wait.last_reason)

        self._start_compute('host1')
        report_ = self.dispatcher.run_pass()
        # Projects take turns: a1 (oldest), then b1 of the other project,
        # not a2; b2 does not fit at all.
        self.assertEqual([a1['id'], b1['id']], report_.dispatched)
        for server in (a1, b1):
            active = self._wait_for_state_change(server, 'ACTIVE')
            self.assertEqual(server['id'], active['id'])
            self.assertEqual(1, len(self._allocations(server['id'])))
        self.assertEqual({a1['id']: dispatcher_mod.CREATED,
                          b1['id']: dispatcher_mod.CREATED},
                         self._settle_all())
        self.assertIsNone(self._wait(a1['id']))
        self.assertIsNone(self._wait(b1['id']))
        for server in (a2, b2):
            self.assertEqual('ERROR',
                             self.admin_api.get_server(server['id'])['status'])
            self.assertEqual('waiting', self._wait(server['id']).state)
            self.assertEqual({}, self._allocations(server['id']))

        attempts = self._ours('cell0_rebuild.wait.attempt')
        self.assertEqual([(a1['id'], 1, 'dispatched'),
                          (b1['id'], 1, 'dispatched')],
                         [(n['instance_uuid'], n['attempts'], n['outcome'])
                          for n in attempts])
        for note in attempts:
            self.assertTrue(note['request_id'].startswith('req-'))
            self.assertEqual(note['request_id'], self._action_request_id(
                note['instance_uuid']))
        ends = self._ours('cell0_rebuild.wait.end')
        self.assertEqual({(a1['id'], 'rebuilt'), (b1['id'], 'rebuilt')},
                         {(n['instance_uuid'], n['reason']) for n in ends})

    def _action_request_id(self, server_id):
        """The request id of the server's ``rebuild`` instance action."""
        actions = self.admin_api.get_instance_actions(server_id)
        return next(a['request_id'] for a in actions
                    if a['action'] == 'rebuild')

    def test_intake_from_the_burial_notification(self):
        server = self._bury(self.api_a, opt_in='90m')
        burial = next(n for n in self.notifier.versioned_notifications
                      if n['event_type'] == BURIAL and
                      n['payload']['nova_object.data']['instance_uuid']
                      == server['id'])
        wait = self.dispatcher.intake(None, burial['payload'])
        self.assertEqual(server['id'], wait.instance_uuid)
        self.assertEqual(('waiting', 'metadata', 'project-a', 'user-a'),
                         (wait.state, wait.source, wait.project_id,
                          wait.user_id))
        self.assertEqual(datetime.timedelta(minutes=90),
                         wait.deadline - wait.queued_at)
        self.assertIsNotNone(self._wait(server['id']).shape_key)
        [start] = self._ours('cell0_rebuild.wait.start')
        self.assertEqual(
            (server['id'], 'project-a', 'user-a', 'metadata', 0),
            (start['instance_uuid'], start['project_id'], start['user_id'],
             start['source'], start['attempts']))
        # A second notice of the same burial opens nothing more.
        self.assertIsNone(self.dispatcher.intake(None, burial['payload']))

    def test_a_burial_by_a_database_outage_waits_too(self):
        # Gate fault rebuilds it: its wait is not ended at intake.
        server = self._bury(self.api_a, opt_in='90m')
        burial = next(n for n in self.notifier.versioned_notifications
                      if n['event_type'] == BURIAL and
                      n['payload']['nova_object.data']['instance_uuid']
                      == server['id'])
        payload = copy.deepcopy(burial['payload'])
        reason = payload['nova_object.data']['reason']['nova_object.data']
        for name in ('DBConnectionError', 'MaxRetriesExceeded_Remote'):
            reason['exception'] = name
            wait = self.dispatcher.intake(None, payload)
            self.assertEqual(('waiting', None), (wait.state,
                                                 wait.reason_code), name)
            wait.destroy()

    def test_a_gate_refusal_backs_off(self):
        server = self._bury(self.api_a)
        self.dispatcher.sweep_intake()
        self.admin_api.api_put(
            '/os-quota-sets/project-a',
            {'quota_set': {'instances': 0, 'force': True}})
        self._start_compute('host1')
        now = timeutils.utcnow()
        report_ = self.dispatcher.run_pass(now=now)
        self.assertEqual([server['id']], report_.refused)
        wait = self._wait(server['id'])
        self.assertEqual(('waiting', 'gate_refused', 1),
                         (wait.state, wait.reason_code, wait.attempts))
        initial = CONF.cell0_rebuild_pending.backoff_initial_seconds
        # The column keeps whole seconds.
        self.assertEqual(
            (now + datetime.timedelta(seconds=initial)).replace(
                microsecond=0),
            wait.next_attempt_at.replace(tzinfo=None, microsecond=0))
        self.assertEqual({}, self.dispatcher.in_flight)
        [attempt] = self._ours('cell0_rebuild.wait.attempt')
        self.assertEqual(('refused', 'quota', 403),
                         (attempt['outcome'], attempt['gate'],
                          attempt['code']))
        # Backing off: the next pass at the same instant asks nothing.
        queries = len(self.candidate_queries)
        self.assertEqual([], self.dispatcher.run_pass(now=now).dispatched)
        self.assertEqual(queries, len(self.candidate_queries))
        self.assertEqual('ERROR', self._status(server))

    def test_a_locked_server_waits_until_unlocked(self):
        server = self._bury(self.api_a)
        self.dispatcher.sweep_intake()
        self.api_a.post_server_action(server['id'], {'lock': {}})
        self._start_compute('host1')
        now = timeutils.utcnow()
        self.assertEqual([server['id']],
                         self.dispatcher.run_pass(now=now).refused)
        wait = self._wait(server['id'])
        self.assertEqual(('waiting', 'gate_refused', 1),
                         (wait.state, wait.reason_code, wait.attempts))
        self.assertIn('is locked', wait.last_reason)
        [attempt] = self._ours('cell0_rebuild.wait.attempt')
        self.assertEqual(('refused', 'lock', 409),
                         (attempt['outcome'], attempt['gate'],
                          attempt['code']))
        self.assertEqual('ERROR', self._status(server))
        # Unlocked, it is rebuilt once its back-off passed.
        self.api_a.post_server_action(server['id'], {'unlock': {}})
        later = now + datetime.timedelta(seconds=60)
        self.assertEqual([server['id']],
                         self.dispatcher.run_pass(now=later).dispatched)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_buried_again_by_the_scheduler_backs_off(self):
        self._start_compute('host1')
        group = self.api.post_server_groups(
            {'name': 'apart', 'policy': 'anti-affinity'})
        hints = {'group': group['id']}
        first = self._build_server(networks='none')
        first = self.api.post_server({'server': first,
                                      'os:scheduler_hints': hints})
        self._wait_for_state_change(first, 'ACTIVE')
        body = self._build_server(networks='none')
        body['metadata'] = {wait_opt_in.METADATA_KEY: '1h'}
        created = self.api.post_server({'server': body,
                                        'os:scheduler_hints': hints})
        second = self._wait_for_state_change(created, 'ERROR')
        self.dispatcher.sweep_intake()

        # Placement has room for one more VCPU; the group's filter refuses.
        now = timeutils.utcnow()
        self.assertEqual([second['id']],
                         self.dispatcher.run_pass(now=now).dispatched)
        # The settle signal: Nova's notification of the second burial
        # (both burials are of this server: the first server is ACTIVE).
        burials = self.notifier.wait_for_versioned_notifications(
            BURIAL, n_events=2, timeout=60)
        self.assertEqual([second['id']] * 2, [
            b['payload']['nova_object.data']['instance_uuid']
            for b in burials])
        self.assertIsNone(self.dispatcher.intake(None, burials[-1]['payload']))
        self.assertEqual({}, self.dispatcher.in_flight)
        wait = self._wait(second['id'])
        self.assertEqual(('waiting', 'scheduler_refused', 1),
                         (wait.state, wait.reason_code, wait.attempts))
        self.assertIsNotNone(wait.next_attempt_at)
        self.assertIsNotNone(wait.shape_key)
        self.assertEqual('ERROR', self._status(second))
        self.assertEqual({}, self._allocations(second['id']))

    def test_deadline_passed_ends_the_wait(self):
        server = self._bury(self.api_a, opt_in='1h')
        self.dispatcher.sweep_intake()
        self._start_compute('host1')
        later = timeutils.utcnow() + datetime.timedelta(hours=2)
        report_ = self.dispatcher.run_pass(now=later)
        self.assertEqual(([server['id']], []),
                         (report_.ended, report_.dispatched))
        wait = self._wait(server['id'])
        self.assertEqual(('ended', 'deadline'),
                         (wait.state, wait.reason_code))
        [end] = self._ours('cell0_rebuild.wait.end')
        self.assertEqual((server['id'], 'deadline'),
                         (end['instance_uuid'], end['reason']))
        self.assertEqual('ERROR', self._status(server))
        self.assertEqual(['create'], self._actions(server['id']))

    def test_a_server_deleted_while_waiting_loses_its_row(self):
        server = self._bury(self.api_a)
        self.dispatcher.sweep_intake()
        self.admin_api.delete_server(server['id'])
        self._wait_until_deleted(server)
        self.assertEqual(dispatcher_mod.DELETED, self.dispatcher.settle(
            None, server['id'], dispatcher_mod.DELETED))
        self.assertIsNone(self._wait(server['id']))
        [end] = self._ours('cell0_rebuild.wait.end')
        self.assertEqual('deleted', end['reason'])

    def test_a_pass_finding_the_server_deleted_forgets_it(self):
        server = self._bury(self.api_a)
        self.dispatcher.sweep_intake()
        self.admin_api.delete_server(server['id'])
        self._wait_until_deleted(server)
        self._start_compute('host1')
        report_ = self.dispatcher.run_pass()
        self.assertEqual([server['id']], report_.refused)
        self.assertIsNone(self._wait(server['id']))
        self.assertEqual({}, self.dispatcher.in_flight)

    def test_a_server_not_opted_in_is_never_touched(self):
        plain = self._bury(self.api_a, opt_in=None)
        self.assertEqual([], self.dispatcher.sweep_intake())
        self._start_compute('host1')
        report_ = self.dispatcher.run_pass()
        self.assertEqual(([], 0), (report_.dispatched, report_.queries))
        self.assertIsNone(self._wait(plain['id']))
        self.assertEqual('ERROR', self._status(plain))
        self.assertEqual(['create'], self._actions(plain['id']))
        self.assertEqual([], self._ours('cell0_rebuild.wait.start'))


class RebuildInProgressTest(test_move_faults.MoveChecks, _PendingTestBase):
    """Another rebuild holds the server when ours is dispatched."""

    def test_a_rebuild_in_progress_settles_the_wait(self):
        server = self._bury(self.api)
        self.dispatcher.sweep_intake()
        self._start_compute('host1')
        hold = test_move_lease._Hold()
        # The user's own rebuild, held once it claimed the server.
        with self._inject('nova_build_requests.new_build_request', hold):
            thread = eventlet.spawn(self._rebuild, server['id'])
            hold.reached.wait()
            report_ = self.dispatcher.run_pass()
            hold.release.send()
            resp = thread.wait()
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual(([], [server['id']]),
                         (report_.dispatched, report_.refused))
        # Not ours to back off: the row waits for that rebuild's outcome.
        self.assertEqual('dispatched', self._wait(server['id']).state)
        [attempt] = self._ours('cell0_rebuild.wait.attempt')
        self.assertEqual(('refused', None, 409),
                         (attempt['outcome'], attempt['gate'],
                          attempt['code']))
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual({server['id']: dispatcher_mod.CREATED},
                         self._settle_all())
        self.assertIsNone(self._wait(server['id']))
        self.assertEqual(1, len(self._allocations(server['id'])))


class WaitApiNotificationsTest(_PendingTestBase):
    """PUT and DELETE .../wait send wait.start and wait.end."""

    def _path(self, server_id):
        return '/os-cell0-rebuild/servers/%s/wait' % server_id

    def test_put_starts_and_delete_cancels(self):
        server = self._bury(self.api_a, opt_in=None)
        resp = self.api_a.api_put(self._path(server['id']),
                                  {'wait': {'deadline': '2h'}},
                                  check_response_status=False)
        self.assertEqual(200, resp.status, resp.body)
        [start] = self._ours('cell0_rebuild.wait.start')
        self.assertEqual((server['id'], 'api', 'user-a', 'project-a'),
                         (start['instance_uuid'], start['source'],
                          start['user_id'], start['project_id']))
        resp = self.api_a.api_delete(self._path(server['id']),
                                     check_response_status=False)
        self.assertEqual(204, resp.status, resp.body)
        [end] = self._ours('cell0_rebuild.wait.end')
        self.assertEqual((server['id'], 'cancelled'),
                         (end['instance_uuid'], end['reason']))
        # Cancelling again ends nothing more.
        self.assertEqual(204, self.api_a.api_delete(
            self._path(server['id']), check_response_status=False).status)
        self.assertEqual(1, len(self._ours('cell0_rebuild.wait.end')))
        # A cancelled wait is never served.
        self._start_compute('host1')
        self.assertEqual([], self.dispatcher.run_pass().dispatched)
