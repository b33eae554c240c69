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

"""The pending service's events, coalescing, timers and leadership, with a
fake clock and no thread: tests call ``tick()`` as the worker would.

The dispatcher and the leadership are recording stand-ins here; the real
ones are driven by the service in ``tests/functional/
test_pending_service.py`` and ``tests/functional/db/
test_pending_service_copies.py``.
"""

import datetime
import threading

import oslo_messaging

from nova_cell0_rebuild import exception
from nova_cell0_rebuild.pending import events
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.pending import order
from nova_cell0_rebuild.pending import service as service_mod
from nova_cell0_rebuild.tests.unit import base

HANDLED = oslo_messaging.NotificationResult.HANDLED
UUID = '11111111-2222-3333-4444-555555555555'
OTHER = '66666666-7777-8888-9999-000000000000'


def _payload(name='InstanceActionPayload', **data):
    return {'nova_object.name': name, 'nova_object.data': data}


class Clock(object):

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


class FakeDispatcher(object):
    """Records what the service asks of it."""

    holder_in_flight = False

    def __init__(self):
        self.calls = []
        self.in_flight = {}
        self.on_pass = None
        self.pass_error = None

    def run_pass(self):
        self.calls.append('run_pass')
        if self.on_pass is not None:
            self.on_pass()
        if self.pass_error is not None:
            raise self.pass_error

    def intake(self, context, payload):
        self.calls.append(('intake', payload['nova_object.data']
                           ['instance_uuid']))

    def settle(self, context, uuid, signal):
        self.calls.append(('settle', uuid, signal))

    def shape_opened(self, context, uuid):
        self.calls.append(('shape_opened', uuid))

    def __getattr__(self, name):
        if name not in service_mod.PendingService.SWEEP_STEPS:
            raise AttributeError(name)
        return lambda: self.calls.append(name)

    def passes(self):
        return self.calls.count('run_pass')


class FakeLeadership(object):

    def __init__(self, url='file:///tmp/x', wins=True):
        self.url = url
        self.wins = wins
        self.epoch = None
        self.renewals = 0
        self.deposed = False
        self.stopped = False

    @property
    def leading(self):
        return self.epoch is not None

    def elect(self):
        if self.epoch is None and self.wins:
            self.epoch = 1
        return self.epoch

    def renew(self):
        self.renewals += 1
        if self.deposed:
            self.epoch = None
        return self.leading

    def stop(self):
        self.stopped = True
        self.epoch = None


class FakeListener(object):

    def __init__(self, endpoint, log):
        self.endpoint = endpoint
        self.log = log

    def start(self):
        self.log.append('start')

    def stop(self):
        self.log.append('stop')


class _ServiceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(event_delay_seconds=0.25, late_event_recheck_seconds=10,
                   sweep_interval_seconds=300, backoff_initial_seconds=1.0,
                   backoff_max_seconds=60)
        self.clock = Clock()
        self.dispatcher = FakeDispatcher()
        self.leadership = FakeLeadership()
        self.listener_log = []

    def flags(self, **kwargs):
        for name, value in kwargs.items():
            self.conf.set_override(name, value,
                                   group='cell0_rebuild_pending')

    def _service(self, start=True):
        service = service_mod.PendingService(
            self.conf, self.dispatcher, self.leadership,
            listener_factory=lambda endpoint: FakeListener(
                endpoint, self.listener_log),
            clock=self.clock)
        if start:
            service.start()
            service.tick()  # the new dispatcher's sweep
            del self.dispatcher.calls[:]
        return service

    def _info(self, service, event_type, payload=None):
        return service.endpoint.info(
            {}, 'nova-compute:host1', event_type,
            payload or _payload(uuid=OTHER, host='host1'), {})


class ReadTest(base.TestCase):
    """What each notification means."""

    def test_room_freed_now(self):
        for event_type in ('instance.delete.end',
                           'instance.shelve_offload.end',
                           'instance.resize_revert.end'):
            hint = events.read(event_type, _payload(uuid=UUID, host='h'))
            self.assertEqual('now', hint.freed, event_type)
            self.assertIsNone(hint.settle)

    def test_room_freed_before_placement_knows_asks_a_recheck(self):
        for event_type in ('instance.resize_confirm.end',
                           'instance.live_migration_post.end'):
            self.assertEqual('late', events.read(
                event_type, _payload(uuid=UUID, host='h')).freed)

    def test_services_count_only_an_enabled_compute(self):
        def hint(**data):
            return events.read('service.update', _payload(
                'ServiceStatusPayload', **data)).freed
        self.assertEqual('late', hint(binary='nova-compute',
                                      disabled=False, forced_down=False))
        self.assertIsNone(hint(binary='nova-compute', disabled=True,
                               forced_down=False))
        self.assertIsNone(hint(binary='nova-compute', disabled=False,
                               forced_down=True))
        self.assertIsNone(hint(binary='nova-scheduler', disabled=False,
                               forced_down=False))
        self.assertEqual('late', events.read('service.create', _payload(
            'ServiceStatusPayload', binary='nova-compute', disabled=False,
            forced_down=False)).freed)

    def test_deleting_a_server_without_host_frees_nothing_and_settles(self):
        hint = events.read('instance.delete.end',
                           _payload(uuid=UUID, host=None))
        self.assertIsNone(hint.freed)
        self.assertEqual((UUID, events.DELETE_END), hint.settle)

    def test_deleting_a_dispatched_server_frees_and_settles(self):
        hint = events.read('instance.delete.end',
                           _payload(uuid=UUID, host='h'), {UUID})
        self.assertEqual(('now', (UUID, events.DELETE_END)),
                         (hint.freed, hint.settle))

    def test_create_start_settles_only_our_servers(self):
        self.assertFalse(events.read('instance.create.start',
                                     _payload(uuid=UUID)))
        self.assertEqual((UUID, events.CREATE_START), events.read(
            'instance.create.start', _payload(uuid=UUID), {UUID}).settle)

    def test_burial_goes_to_the_intake(self):
        payload = _payload('ComputeTaskPayload', instance_uuid=UUID)
        self.assertIs(payload, events.read(events.BURIAL, payload).burial)

    def test_a_wait_opened_is_shaped_at_once(self):
        hint = events.read(events.WAIT_START, _payload(
            'Cell0RebuildWaitPayload', instance_uuid=UUID, source='api'))
        self.assertEqual((UUID, None), (hint.opened, hint.freed))

    def test_anything_else_means_nothing(self):
        self.assertFalse(events.read('instance.update', _payload()))
        self.assertFalse(events.read('instance.delete.end', 'garbage'))

    def test_filter_takes_exactly_our_event_types(self):
        rule = events.PendingEndpoint.filter_rule
        for event_type in events.EVENT_TYPES:
            self.assertTrue(rule.match({}, {}, event_type, {}, {}),
                            event_type)
        for event_type in ('instance.delete.start', 'instance.update',
                           'xinstance.delete.end', 'service.update.x'):
            self.assertFalse(rule.match({}, {}, event_type, {}, {}),
                             event_type)


class CoalescingTest(_ServiceTest):

    def test_events_in_the_window_make_one_pass(self):
        service = self._service()
        # Exact binary fractions of a second, so that no rounding moves a
        # moment across a deadline.
        for _ in range(20):
            self.assertEqual(HANDLED, self._info(service,
                                                 'instance.delete.end'))
            self.clock.advance(1 / 256.)
        self.assertEqual(0.25 - 20 / 256., service.tick())
        self.assertEqual(0, self.dispatcher.passes())
        self.clock.advance(0.25 - 20 / 256.)
        service.tick()
        self.assertEqual(1, self.dispatcher.passes())
        self.clock.advance(60)
        service.tick()
        self.assertEqual(1, self.dispatcher.passes())

    def test_an_event_during_a_pass_makes_one_more_pass_after_it(self):
        service = self._service()
        self._info(service, 'instance.delete.end')

        def events_meanwhile():
            self.dispatcher.on_pass = None
            self.clock.advance(0.5)
            for _ in range(3):
                self._info(service, 'instance.shelve_offload.end')
        self.dispatcher.on_pass = events_meanwhile
        self.clock.advance(0.25)
        wait = service.tick()
        self.assertEqual(1, self.dispatcher.passes())
        self.assertEqual(0.25, wait)
        self.clock.advance(wait)
        service.tick()
        self.assertEqual(2, self.dispatcher.passes())
        self.clock.advance(60)
        service.tick()
        self.assertEqual(2, self.dispatcher.passes())

    def test_an_event_before_placement_knows_gets_a_late_recheck(self):
        service = self._service()
        for _ in range(5):
            self._info(service, 'instance.resize_confirm.end')
        self.clock.advance(0.25)
        service.tick()
        self.assertEqual(1, self.dispatcher.passes())
        self.clock.advance(9.5)
        service.tick()
        self.assertEqual(1, self.dispatcher.passes())
        self.clock.advance(0.25)
        service.tick()
        self.assertEqual(2, self.dispatcher.passes())
        self.clock.advance(60)
        service.tick()
        self.assertEqual(2, self.dispatcher.passes())

    def test_placement_away_retries_the_pass_with_back_off(self):
        service = self._service()
        self.dispatcher.pass_error = exception.PlacementUnavailable(
            reason='503')
        self._info(service, 'instance.delete.end')
        self.clock.advance(0.25)
        self.assertAlmostEqual(1.0, service.tick())
        self.clock.advance(1.0)
        self.assertAlmostEqual(2.0, service.tick())
        self.dispatcher.pass_error = None
        self.clock.advance(2.0)
        service.tick()
        self.assertEqual(3, self.dispatcher.passes())
        self.clock.advance(60)
        service.tick()
        self.assertEqual(3, self.dispatcher.passes())

    def test_a_pass_that_fails_does_not_stop_the_worker(self):
        service = self._service()
        self.dispatcher.pass_error = RuntimeError('boom')
        self._info(service, 'instance.delete.end')
        self.clock.advance(0.25)
        service.tick()
        self.dispatcher.pass_error = None
        self._info(service, 'instance.delete.end')
        self.clock.advance(0.25)
        service.tick()
        self.assertEqual(2, self.dispatcher.passes())


class InboxTest(_ServiceTest):

    def test_burials_and_settle_signals_go_to_the_dispatcher_in_order(self):
        service = self._service()
        self.dispatcher.in_flight[UUID] = object()
        service.endpoint.error({}, 'nova-conductor:c', events.BURIAL,
                               _payload('ComputeTaskPayload',
                                        instance_uuid=OTHER), {})
        self._info(service, 'instance.create.start', _payload(uuid=UUID))
        self._info(service, 'instance.delete.end',
                   _payload(uuid=OTHER, host=None))
        # Nothing is done in the listener's thread.
        self.assertEqual([], self.dispatcher.calls)
        service.tick()
        self.assertEqual([('intake', OTHER),
                          ('settle', UUID, events.CREATE_START),
                          ('settle', OTHER, events.DELETE_END)],
                         self.dispatcher.calls)

    def _settle_in_flight(self, uuid, holder):
        service = self._service()
        service.tick()
        passes = self.dispatcher.passes()
        self.dispatcher.in_flight[uuid] = object()
        self.dispatcher.reservation = order.Reservation(
            holder, datetime.datetime(2026, 12, 7, 9, 0))
        self.dispatcher.holder_in_flight = holder in self.dispatcher.in_flight
        self._info(service, 'instance.create.start', _payload(uuid=uuid))
        service.tick()
        self.assertIn(('settle', uuid, events.CREATE_START),
                      self.dispatcher.calls)
        self.clock.advance(self.conf.cell0_rebuild_pending
                           .event_delay_seconds)
        service.tick()
        return self.dispatcher.passes() - passes

    def test_the_reservation_holder_settling_asks_for_a_pass(self):
        # Passes sent nothing while it was in flight: the others go at
        # once, not at the next freed room or sweep.
        self.assertEqual(1, self._settle_in_flight(UUID, holder=UUID))

    def test_another_server_settling_asks_for_no_pass(self):
        self.assertEqual(0, self._settle_in_flight(OTHER, holder=UUID))

    def test_a_wait_opened_is_shaped_then_a_pass_looks_for_room(self):
        service = self._service()
        service.tick()
        passes = self.dispatcher.passes()
        self._info(service, events.WAIT_START, _payload(
            'Cell0RebuildWaitPayload', instance_uuid=UUID))
        self.assertEqual(self.conf.cell0_rebuild_pending.event_delay_seconds,
                         service.tick())
        self.assertEqual(('shape_opened', UUID), self.dispatcher.calls[-1])
        self.assertEqual(passes, self.dispatcher.passes())
        self.clock.advance(self.conf.cell0_rebuild_pending
                           .event_delay_seconds)
        service.tick()
        self.assertEqual(passes + 1, self.dispatcher.passes())

    def test_the_endpoint_never_raises(self):
        service = self._service()

        def broken(hint):
            raise RuntimeError('broken')
        service.hint = broken
        for event_type in events.EVENT_TYPES:
            self.assertEqual(HANDLED, self._info(service, event_type))
            self.assertEqual(HANDLED, service.endpoint.error(
                {}, 'p', event_type, None, None))

    def test_an_intake_that_fails_does_not_stop_the_others(self):
        service = self._service()

        def failing(context, payload):
            raise RuntimeError('database away')
        self.dispatcher.intake = failing
        self.dispatcher.in_flight[UUID] = object()
        service.endpoint.error({}, 'c', events.BURIAL, _payload(
            'ComputeTaskPayload', instance_uuid=OTHER), {})
        self._info(service, 'instance.create.start', _payload(uuid=UUID))
        service.tick()
        self.assertEqual([('settle', UUID, events.CREATE_START)],
                         self.dispatcher.calls)


class TimersTest(_ServiceTest):

    def test_a_new_dispatcher_listens_and_sweeps_at_once(self):
        service = self._service(start=False)
        service.start()
        self.assertEqual(['start'], self.listener_log)
        service.tick()
        self.assertEqual(list(service.SWEEP_STEPS) + ['run_pass'],
                         self.dispatcher.calls)

    def test_sweep_every_interval(self):
        service = self._service()
        self.assertEqual(leader.HEARTBEAT_SECONDS, service.tick())
        for _ in range(10):
            self.clock.advance(30)
            service.tick()
        self.assertEqual(1, service.sweeps - 1)
        self.assertEqual(list(service.SWEEP_STEPS) + ['run_pass'],
                         self.dispatcher.calls)

    def test_heartbeat_every_thirty_seconds(self):
        service = self._service()
        self.clock.advance(29)
        service.tick()
        self.assertEqual(0, self.leadership.renewals)
        self.clock.advance(1)
        service.tick()
        self.assertEqual(1, self.leadership.renewals)
        self.clock.advance(30)
        service.tick()
        self.assertEqual(2, self.leadership.renewals)

    def test_a_long_sweep_renews_the_heartbeat_between_its_steps(self):
        service = self._service(start=False)
        service.start()

        def slow():
            self.clock.advance(leader.HEARTBEAT_SECONDS + 1)
        self.dispatcher.sweep_intake = slow
        service.tick()
        self.assertEqual(1, self.leadership.renewals)

    def test_a_copy_deposed_during_a_sweep_stops_it(self):
        service = self._service(start=False)
        service.start()

        def slow_and_deposed():
            self.clock.advance(leader.HEARTBEAT_SECONDS + 1)
            self.leadership.deposed = True
        self.dispatcher.sweep_gone = slow_and_deposed
        service.tick()
        self.assertEqual(['settle_in_flight', 'settle_expired'],
                         self.dispatcher.calls)

    def test_a_sweep_step_that_fails_does_not_skip_the_others(self):
        service = self._service(start=False)

        def broken():
            raise RuntimeError('Neutron away')
        self.dispatcher.sweep_gone = broken
        service.start()
        service.tick()
        self.assertEqual(['settle_in_flight', 'settle_expired',
                          'sweep_intake', 'refresh_shapes', 'run_pass'],
                         self.dispatcher.calls)


class LeadershipTest(_ServiceTest):

    def test_a_standby_does_nothing_and_tries_the_election(self):
        self.leadership.wins = False
        service = self._service(start=False)
        service.start()
        self.assertEqual([], self.listener_log)
        self.assertEqual(leader.ELECTION_SECONDS, service.tick())
        self._info(service, 'instance.delete.end')
        self.clock.advance(1)
        service.tick()
        self.assertEqual([], self.dispatcher.calls)
        # The leader goes: this copy wins the next election.
        self.leadership.wins = True
        self.clock.advance(leader.ELECTION_SECONDS)
        service.tick()
        self.assertEqual(['start'], self.listener_log)
        self.assertEqual(list(service.SWEEP_STEPS) + ['run_pass'],
                         self.dispatcher.calls)

    def test_a_deposed_copy_stops_dispatching_and_stands_by(self):
        service = self._service()
        self.dispatcher.in_flight[UUID] = object()
        self._info(service, 'instance.delete.end')
        self.leadership.deposed = True
        self.leadership.wins = False
        self.clock.advance(leader.HEARTBEAT_SECONDS)
        service.tick()
        self.assertEqual([], self.dispatcher.calls)
        self.assertEqual(['start', 'stop'], self.listener_log)
        self.assertEqual({}, self.dispatcher.in_flight)
        self.assertFalse(service.stopping)
        # Events handed in by a listener still stopping are dropped.
        self._info(service, 'instance.delete.end')
        self.clock.advance(leader.ELECTION_SECONDS)
        service.tick()
        self.assertEqual([], self.dispatcher.calls)
        # It stands by, and is elected again once the lock is free.
        self.leadership.deposed = False
        self.leadership.wins = True
        self.clock.advance(leader.ELECTION_SECONDS)
        service.tick()
        self.assertEqual(['start', 'stop', 'start'], self.listener_log)
        self.assertIn('run_pass', self.dispatcher.calls)

    def test_deposed_during_a_pass_stops_listening(self):
        service = self._service()

        def deposed():
            self.leadership.epoch = None  # the fence said no
        self.dispatcher.on_pass = deposed
        self._info(service, 'instance.delete.end')
        self.clock.advance(0.25)
        self.assertEqual(leader.ELECTION_SECONDS, service.tick())
        self.assertEqual(['start', 'stop'], self.listener_log)

    def test_without_a_url_a_deposed_copy_stops(self):
        self.leadership.url = None
        service = self._service()
        self.leadership.deposed = True
        self.clock.advance(leader.HEARTBEAT_SECONDS)
        service.tick()
        self.assertTrue(service.deposed)
        self.assertTrue(service.stopping)

    def test_a_heartbeat_that_fails_is_tried_again_soon(self):
        service = self._service()

        def failing():
            raise RuntimeError('database away')
        self.leadership.renew = failing
        self.clock.advance(leader.HEARTBEAT_SECONDS)
        self.assertEqual(leader.ELECTION_SECONDS, service.tick())
        self.assertTrue(service.leading)

    def test_an_election_that_fails_is_tried_again(self):
        self.leadership.wins = False
        service = self._service(start=False)
        service.start()

        def failing():
            raise RuntimeError('redis away')
        self.leadership.elect = failing
        self.clock.advance(leader.ELECTION_SECONDS)
        self.assertEqual(leader.ELECTION_SECONDS, service.tick())
        self.assertFalse(service.leading)


class RunTest(_ServiceTest):

    def test_stop_ends_the_loop_and_steps_down(self):
        service = self._service(start=False)
        service.start()
        worker = threading.Thread(target=service.run)
        worker.start()
        service.stop()
        worker.join(10)
        self.assertFalse(worker.is_alive())
        self.assertTrue(self.leadership.stopped)
        self.assertEqual(['start', 'stop'], self.listener_log)

    def test_a_fault_in_the_worker_is_logged_and_the_loop_goes_on(self):
        service = self._service()
        ticks = []

        def faulty_tick():
            ticks.append(1)
            if len(ticks) == 1:
                raise RuntimeError('a bug')
            service.stop()
            return 0
        service.tick = faulty_tick
        service.FAULT_PAUSE = 0
        service.run()
        self.assertEqual(2, len(ticks))
        self.assertTrue(self.leadership.stopped)


class ScheduleTest(base.TestCase):

    def test_a_request_in_the_window_of_a_due_pass_is_covered(self):
        schedule = service_mod.PassSchedule(0.25)
        self.assertTrue(schedule.request(10.25))
        self.assertFalse(schedule.request(10.375))
        self.assertFalse(schedule.request(10.5))
        self.assertTrue(schedule.request(10.625))
        self.assertTrue(schedule.request(20.0))
        # A request earlier than a due pass is not covered by it.
        self.assertTrue(schedule.request(10.0))
        self.assertFalse(schedule.take(9.5))
        self.assertTrue(schedule.take(10.75))
        self.assertEqual(20.0, schedule.next_due())
        self.assertEqual(1, len(schedule))
