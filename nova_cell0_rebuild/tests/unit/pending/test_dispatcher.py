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

"""The dispatcher's decisions on real wait rows (SQLite); Nova, placement
and the rebuild replaced: what each answer does to the wait.
"""

import datetime
from unittest import mock

import fixtures
from oslo_context import context as oslo_context
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_placement
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.notifications import wait as wait_notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.pending import intake
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.tests.unit import base

T0 = datetime.datetime(2026, 12, 7, 3, 0, 0)
NOW = T0 + datetime.timedelta(minutes=30)
CELL0 = nova_servers.CELL0_UUID


def _uuid(n):
    return '00000000-0000-0000-0000-%012d' % n


class _Context(oslo_context.RequestContext):
    def elevated(self):
        return _Context(is_admin=True)


class DispatcherTest(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.flags = lambda **kw: [self.conf.set_override(
            k, v, group='cell0_rebuild_pending') for k, v in kw.items()]
        self.flags(enabled=True)
        self.context = _Context(is_admin=True)
        self.dispatcher = dispatcher_mod.Dispatcher(self.conf, self.context,
                                                    'test')
        self.rebuild = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.api.rebuild.rebuild_as_admin')).mock
        # Reads Nova's cell0 row (functional test_pending_dispatcher).
        self.locked = self.useFixture(fixtures.MockPatchObject(
            dispatcher_mod, '_refuse_if_locked')).mock
        self.candidates = self.useFixture(fixtures.MockPatchObject(
            nova_placement, 'candidates',
            return_value=nova_placement.Candidates(True, 5, ''))).mock
        self.notify = self.useFixture(fixtures.MockPatchObject(
            wait_notifications, '_notify')).mock
        self.useFixture(fixtures.MockPatchObject(
            intake, 'compute_shape'))
        self.serial = 0

    def _wait(self, project='p', minute=0, deadline_hours=6,
              query='resources=X:1'):
        self.serial += 1
        wait = objects.Cell0Wait.open(
            self.context, _uuid(self.serial), project, 'user', 'metadata',
            T0 + datetime.timedelta(minutes=minute),
            T0 + datetime.timedelta(hours=deadline_hours))
        key = objects.Cell0WaitShape.ensure(self.context, [query])
        wait.set_shape(key, now=T0)
        return wait.instance_uuid

    def _row(self, uuid):
        return objects.Cell0Wait.get_by_instance_uuid(self.context, uuid)

    def _phases(self):
        return [(c[0][1], c[1].get('outcome') or c[1].get('reason'))
                for c in self.notify.call_args_list]

    def test_a_dispatch_hands_the_server_over_with_its_own_request_id(self):
        uuid = self._wait()
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual([uuid], report.dispatched)
        (context, conf, server_id), _ = self.rebuild.call_args
        self.assertEqual(uuid, server_id)
        self.assertTrue(context.request_id.startswith('req-'))
        self.assertEqual(context.request_id, context.global_request_id)
        row = self._row(uuid)
        self.assertEqual(('dispatched', 1, context.request_id, 'test'),
                         (row.state, row.attempts, row.last_request_id,
                          row.owner))
        self.assertEqual(['attempt'], [p for p, _ in self._phases()])
        self.assertIn(uuid, self.dispatcher.in_flight)

    def test_a_gate_refusal_backs_off_exponentially(self):
        uuid = self._wait()
        self.rebuild.side_effect = exception.GateRefused('quota', 403, 'no')
        self.dispatcher.run_pass(now=NOW)
        row = self._row(uuid)
        self.assertEqual(('waiting', 'gate_refused', 1),
                         (row.state, row.reason_code, row.attempts))
        self.assertEqual(NOW + datetime.timedelta(seconds=1),
                         row.next_attempt_at.replace(tzinfo=None))
        later = NOW + datetime.timedelta(seconds=1)
        self.dispatcher.run_pass(now=later)
        row = self._row(uuid)
        self.assertEqual(2, row.attempts)
        self.assertEqual(later + datetime.timedelta(seconds=2),
                         row.next_attempt_at.replace(tzinfo=None))
        self.assertEqual({}, self.dispatcher.in_flight)

    def test_another_rebuild_in_progress_leaves_the_wait_dispatched(self):
        uuid = self._wait()
        self.rebuild.side_effect = exception.RequestRefused(409, 'moving')
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual([uuid], report.refused)
        self.assertEqual('dispatched', self._row(uuid).state)
        self.assertIn(uuid, self.dispatcher.in_flight)

    def test_a_deleted_server_loses_its_row(self):
        uuid = self._wait()
        self.rebuild.side_effect = exception.RequestRefused(404, 'gone')
        self.dispatcher.run_pass(now=NOW)
        self.assertIsNone(self._row(uuid))
        self.assertEqual([('attempt', 'refused'), ('end', 'deleted')],
                         self._phases())

    def test_in_flight_rebuilds_take_room_and_slots(self):
        self.flags(max_in_flight=2)
        uuids = [self._wait(project='p%d' % n, minute=n) for n in range(3)]
        self.assertEqual(uuids[:2],
                         self.dispatcher.run_pass(now=NOW).dispatched)
        # Both unsettled: no slot left.
        self.assertEqual([], self.dispatcher.run_pass(now=NOW).dispatched)
        # After settle_timeout_seconds they no longer count.
        later = NOW + datetime.timedelta(
            seconds=self.conf.cell0_rebuild_pending.settle_timeout_seconds)
        self.assertEqual(uuids[2:],
                         self.dispatcher.run_pass(now=later).dispatched)

    def test_placement_room_is_reduced_by_unsettled_rebuilds(self):
        uuids = [self._wait(project='p%d' % n, minute=n) for n in range(3)]
        self.candidates.return_value = nova_placement.Candidates(True, 2, '')
        self.assertEqual(uuids[:2],
                         self.dispatcher.run_pass(now=NOW).dispatched)
        # Placement still shows room for 2: ours are not claimed yet.
        self.assertEqual([], self.dispatcher.run_pass(now=NOW).dispatched)

    def test_a_starving_server_that_does_not_fit_holds_the_pass_back(self):
        self.flags(reserve_after_seconds=600, reserve_for_seconds=300)
        big = self._wait(minute=0, query='resources=X:8')
        small = self._wait(project='q', minute=20)

        def answer(context, queries, limit):
            fits = queries == ['resources=X:1']
            return nova_placement.Candidates(fits, int(fits), '')
        self.candidates.side_effect = answer
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual(([], True), (report.dispatched, report.held_back))
        self.assertEqual(big, self.dispatcher.reservation.holder)
        # Once the big one fits it goes alone; passes wait for it to
        # settle (Nova may place the small one first otherwise).
        self.candidates.side_effect = None
        self.candidates.return_value = nova_placement.Candidates(True, 2, '')
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual([big], report.dispatched)
        self.assertTrue(self.dispatcher.holder_in_flight)
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual(([], True), (report.dispatched, report.held_back))
        # Settled (placed): the reservation ends, the small one goes.
        self.dispatcher.settle(self.context, big, dispatcher_mod.CREATED,
                               now=NOW)
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual([small], report.dispatched)
        self.assertIsNone(self.dispatcher.reservation.holder)

    def test_a_deposed_dispatcher_dispatches_nothing(self):
        leadership = leader.Leadership(self.context, None,
                                       leader.holder_of('host-a', 1))
        leadership.elect()
        self.dispatcher.fence = leadership.renew
        first = self._wait(minute=0)
        self.assertEqual([first],
                         self.dispatcher.run_pass(now=NOW).dispatched)
        # A copy restarted on this host takes a newer epoch.
        leader.Leadership(self.context, None,
                          leader.holder_of('host-a', 2)).elect()
        second = self._wait(project='q', minute=1)
        self.assertEqual([], self.dispatcher.run_pass(now=NOW).dispatched)
        self.assertFalse(leadership.leading)
        self.assertEqual('waiting', self._row(second).state)

    def test_refresh_shapes_recomputes_missing_and_stale_ones(self):
        fresh = self._wait()
        stale_at = NOW - datetime.timedelta(
            seconds=self.conf.cell0_rebuild_pending.shape_ttl_seconds + 1)
        self._row(fresh).set_shape(self._row(fresh).shape_key, now=NOW)
        stale = self._wait()
        self._row(stale).set_shape(self._row(stale).shape_key, now=stale_at)
        missing = self._wait()
        self._row(missing).set_shape(None, now=NOW)
        self.assertEqual({stale, missing}, set(
            self.dispatcher.refresh_shapes(now=NOW)))
        self.assertEqual({stale, missing}, {
            call[0][1].instance_uuid
            for call in intake.compute_shape.call_args_list})

    def test_a_pass_reads_as_many_statements_for_few_or_many_waits(self):
        # Its oldest-of-shapes read runs; nobody waited long enough.
        self.flags(reserve_after_seconds=3600)
        self.candidates.side_effect = lambda context, queries, limit: (
            nova_placement.Candidates(queries == ['resources=X:1'], int(
                queries == ['resources=X:1']), 'none'))

        def statements(per_project):
            for project in ('a', 'b', 'c'):
                for query in ('resources=X:1', 'resources=X:9'):
                    for _ in range(per_project):
                        self._wait(project=project, minute=self.serial,
                                   query=query)
            engine = db_api.get_engine()
            count = [0]

            def count_one(*args):
                count[0] += 1
            sa.event.listen(engine, 'before_cursor_execute', count_one)
            try:
                report = self.dispatcher.run_pass(now=NOW)
            finally:
                sa.event.remove(engine, 'before_cursor_execute', count_one)
            self.assertEqual(1, len(report.dispatched))
            self.dispatcher.in_flight.clear()
            return count[0]
        few = statements(1)
        self.assertGreater(few, 0)
        self.assertEqual(few, statements(10))

    def test_no_candidate_notes_the_rows(self):
        uuid = self._wait()
        self.candidates.return_value = nova_placement.Candidates(
            False, 0, 'placement has no candidate for VCPU=8')
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual(([], 1), (report.dispatched, report.queries))
        row = self._row(uuid)
        self.assertEqual(('waiting', 'no_candidate', 0),
                         (row.state, row.reason_code, row.attempts))
        self.rebuild.assert_not_called()

    def test_a_project_not_enabled_is_not_served(self):
        self._wait(project='other')
        self.flags(projects=['mine'])
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual(([], 0), (report.dispatched, report.queries))

    def test_disabled_does_nothing(self):
        self._wait()
        self.flags(enabled=False)
        self.assertEqual(dispatcher_mod.PassReport(),
                         self.dispatcher.run_pass(now=NOW))

    def test_deadline_passed_ends_the_wait(self):
        uuid = self._wait(deadline_hours=0)
        report = self.dispatcher.run_pass(now=NOW)
        self.assertEqual(([uuid], []), (report.ended, report.dispatched))
        self.assertEqual(('ended', 'deadline'),
                         (self._row(uuid).state, self._row(uuid).reason_code))
        self.assertEqual([('end', 'deadline')], self._phases())

    def _dispatched(self):
        uuid = self._wait()
        self.dispatcher.run_pass(now=NOW)
        self.notify.reset_mock()
        return uuid

    def test_settle_created_forgets_the_wait(self):
        uuid = self._dispatched()
        self.dispatcher.settle(None, uuid, dispatcher_mod.CREATED)
        self.assertIsNone(self._row(uuid))
        self.assertEqual([('end', 'rebuilt')], self._phases())
        self.assertEqual({}, self.dispatcher.in_flight)

    def test_settle_buried_backs_off_as_the_scheduler_refused(self):
        uuid = self._dispatched()
        self.dispatcher.settle(None, uuid, dispatcher_mod.BURIED, now=NOW)
        row = self._row(uuid)
        self.assertEqual(('waiting', 'scheduler_refused', 1),
                         (row.state, row.reason_code, row.attempts))
        self.assertEqual(NOW + datetime.timedelta(seconds=1),
                         row.next_attempt_at.replace(tzinfo=None))
        intake.compute_shape.assert_called_once_with(mock.ANY, mock.ANY,
                                                     now=NOW)

    def test_a_shape_that_cannot_be_computed_keeps_the_back_off(self):
        uuid = self._dispatched()
        intake.compute_shape.side_effect = RuntimeError('neutron is down')
        self.assertEqual(dispatcher_mod.BURIED, self.dispatcher.settle(
            None, uuid, dispatcher_mod.BURIED, now=NOW))
        self.assertEqual(('waiting', 'scheduler_refused'),
                         (self._row(uuid).state, self._row(uuid).reason_code))

    def test_settle_buried_after_the_deadline_ends_it(self):
        uuid = self._dispatched()
        self.dispatcher.settle(None, uuid, dispatcher_mod.BURIED,
                               now=T0 + datetime.timedelta(hours=7))
        self.assertEqual('ended', self._row(uuid).state)
        self.assertEqual([('end', 'deadline')], self._phases())

    def test_a_burial_of_a_server_we_did_not_dispatch_changes_nothing(self):
        uuid = self._wait()
        self.assertIsNone(self.dispatcher.settle(
            None, uuid, dispatcher_mod.BURIED, now=NOW))
        self.assertEqual((0, None), (self._row(uuid).attempts,
                                     self._row(uuid).reason_code))

    def test_look_reads_where_the_servers_are(self):
        where = {
            _uuid(1): nova_servers.Whereabouts('cell1', False, False),
            _uuid(2): nova_servers.Whereabouts(CELL0, False, False),
            _uuid(3): nova_servers.Whereabouts(None, False, True),
            _uuid(4): nova_servers.Whereabouts(CELL0, True, False),
        }
        self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'where_is', return_value=where))
        self.assertEqual(
            {_uuid(1): dispatcher_mod.CREATED,
             _uuid(2): dispatcher_mod.BURIED,
             _uuid(4): dispatcher_mod.DELETED,
             _uuid(5): dispatcher_mod.DELETED},
            self.dispatcher.look(self.context,
                                 [_uuid(n) for n in range(1, 6)]))

    def test_sweep_gone_forgets_servers_no_longer_in_cell0(self):
        uuids = [self._wait(minute=n) for n in range(5)]
        ended = self._row(uuids[4])
        ended.end('cancelled', 'x')
        where = {
            uuids[0]: nova_servers.Whereabouts('cell1', False, False),
            uuids[1]: nova_servers.Whereabouts(CELL0, False, False),
            uuids[2]: nova_servers.Whereabouts(None, False, True),
            uuids[4]: nova_servers.Whereabouts(CELL0, True, False),
        }
        self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'where_is', side_effect=lambda context, asked: {
                uuid: where[uuid] for uuid in asked if uuid in where}))
        self.assertEqual({uuids[0]: dispatcher_mod.CREATED,
                          uuids[3]: dispatcher_mod.DELETED,
                          uuids[4]: dispatcher_mod.DELETED},
                         self.dispatcher.sweep_gone(page_size=2))
        self.assertEqual(
            [None, 'waiting', 'waiting', None, None],
            [getattr(self._row(uuid), 'state', None) for uuid in uuids])
        self.assertEqual([('end', 'rebuilt'), ('end', 'deleted'),
                          ('end', 'deleted')], self._phases())

    def test_settle_expired_settles_rows_whose_lease_ran_out(self):
        uuid = self._dispatched()
        self.dispatcher.in_flight.clear()   # a new dispatcher
        self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'where_is', return_value={
                uuid: nova_servers.Whereabouts(CELL0, False, False)}))
        self.assertEqual({}, self.dispatcher.settle_expired(now=NOW))
        later = NOW + datetime.timedelta(
            seconds=self.conf.cell0_rebuild_pending.settle_timeout_seconds)
        self.assertEqual({uuid: dispatcher_mod.BURIED},
                         self.dispatcher.settle_expired(now=later))
        self.assertEqual('waiting', self._row(uuid).state)
