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

"""The cell0_rebuild.rebuild.* notifications, against their samples.

As Nova's notification sample tests: each event is triggered through the
real API and compared, structure and values, with its sample under
doc/notification_samples. The ids that differ from run to run are masked:
each is first checked to be what it must be (the server's uuid, the
rebuild's request id, ...) and the sample's id is then replaced by it.
"""

import os
import threading

import fixtures
import nova.conf as nova_conf
from nova import objects as nova_objects
from nova import rpc
import oslo_messaging
from oslo_serialization import jsonutils

from nova_cell0_rebuild.adapters import nova_cell0_rows
from nova_cell0_rebuild.api import rebuild as rebuild_flow
from nova_cell0_rebuild.notifications import sender
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import request_ids
from nova_cell0_rebuild.tests.functional import silent_broker

SAMPLES = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
    os.pardir, 'doc', 'notification_samples'))

BUILD_REQUESTS = 'nova_cell0_rebuild.adapters.nova_build_requests.'
CELL0_ROWS = 'nova_cell0_rebuild.adapters.nova_cell0_rows.'

#: The ids of the samples, as in Nova's samples, by payload field.
SAMPLE_IDS = {
    'instance_uuid': '178b0921-8f85-4257-88b6-2e743b5a975c',
    'request_id': 'req-5b6c791d-5709-4f36-8fbe-c3e02869e35d',
    'reservation_id': 'r-npxv0e40',
}

#: What Nova's harness calls the host of its services (CONF.host).
HOST = 'fake-mini'


class SampleCheckingTestCase(base.Cell0RebuildTestCase):
    """Helpers to trigger notifications and compare them with samples."""

    def setUp(self):
        super().setUp()
        self.useFixture(request_ids.RequestIdsAsInNovaApi())

    def _ours(self):
        return [n for n in self.notifier.versioned_notifications
                if n['event_type'].startswith('cell0_rebuild.')]

    def _buried(self):
        server = self._create_buried_server()
        return self.admin_api.get_server(server['id'])

    def _start_compute_here(self):
        self._start_compute('host1')
        # The harness leaves CONF.host at the last service started; nova-api
        # runs on its own host.
        self.flags(host=HOST)

    def _run_ids(self, server, resp):
        """The values of this run for the masked fields, checked."""
        request_id = resp.headers['x-openstack-request-id']
        self.assertTrue(request_id.startswith('req-'), request_id)
        reservation_id = server['OS-EXT-SRV-ATTR:reservation_id']
        self.assertTrue(reservation_id.startswith('r-'), reservation_id)
        spec = nova_objects.RequestSpec.get_by_instance_uuid(
            self.admin_context, server['id'])
        return {'instance_uuid': server['id'], 'request_id': request_id,
                'reservation_id': reservation_id,
                'request_spec_id': spec.id}

    def _verify(self, sample_name, actual, run_ids):
        """Compare a notification with its sample, ids masked."""
        with open(os.path.join(SAMPLES, sample_name + '.json')) as sample:
            text = sample.read()
        for field, sample_id in SAMPLE_IDS.items():
            text = text.replace(sample_id, run_ids[field])
        expected = jsonutils.loads(text)
        expected['payload']['nova_object.data']['request_spec_id'] = (
            run_ids['request_spec_id'])
        self.assertJsonEqual(expected, actual)


class NotificationSampleTest(SampleCheckingTestCase):

    def test_rebuild_start_end(self):
        server = self._buried()
        self._start_compute_here()
        self.notifier.reset()
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        run_ids = self._run_ids(server, resp)
        self._wait_for_state_change(server, 'ACTIVE')
        start, end = self._ours()
        self._verify('cell0_rebuild-rebuild-start', start, run_ids)
        self._verify('cell0_rebuild-rebuild-end', end, run_ids)

    def test_rebuild_error(self):
        server = self._buried()
        self.useFixture(fixtures.MockPatch(
            BUILD_REQUESTS + 'schedule_and_build',
            side_effect=RuntimeError('Injected: the conductor is away')))
        self.notifier.reset()
        resp = self._rebuild(server['id'])
        self.assertEqual(500, resp.status, resp.body)
        run_ids = self._run_ids(server, resp)
        start, error = self._ours()
        self._verify('cell0_rebuild-rebuild-start', start, run_ids)
        self._verify('cell0_rebuild-rebuild-error', error, run_ids)

    def test_rebuild_refused(self):
        server = self._buried()
        self.api.post_server_action(server['id'], {'lock': {}})
        self.notifier.reset()
        resp = self._rebuild(server['id'])
        self.assertEqual(409, resp.status, resp.body)
        refused, = self._ours()
        self._verify('cell0_rebuild-rebuild-refused', refused,
                     self._run_ids(server, resp))
        self.assertEqual(resp.body['conflictingRequest']['message'],
                         refused['payload']['nova_object.data']['reason'])


class RefusedAfterStartTest(SampleCheckingTestCase):
    """How a rebuild that started but did not move the server is told.

    Refusals are INFO ``refused``, never ERROR; a server deleted while it
    moved gets ``abandoned``, never ``end``.
    """

    def _by_request(self, resp):
        request_id = resp.headers['x-openstack-request-id']
        return [(n['event_type'], n['priority'])
                for n in self._ours()
                if n['payload']['nova_object.data']['request_id'] ==
                request_id]

    def test_loser_inside_the_move_is_refused_not_an_error(self):
        server = self._buried()
        self._start_compute_here()
        self.notifier.reset()
        real_task = rebuild_flow.RebuildFromCell0.task_factory
        winner = []

        def winner_moves_first(*args, **kwargs):
            # The loser passed every gate and sent start; the winner moves
            # the server before the loser's move claims it.
            if not winner:
                winner.append(None)
                winner[0] = self._rebuild(server['id'])
            return real_task(*args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.api.rebuild.RebuildFromCell0.task_factory',
            staticmethod(winner_moves_first)))
        loser = self._rebuild(server['id'])
        self.assertEqual(202, winner[0].status, winner[0].body)
        self.assertEqual(409, loser.status, loser.body)
        self.assertEqual([('cell0_rebuild.rebuild.start', 'INFO'),
                          ('cell0_rebuild.rebuild.end', 'INFO')],
                         self._by_request(winner[0]))
        self.assertEqual([('cell0_rebuild.rebuild.start', 'INFO'),
                          ('cell0_rebuild.rebuild.refused', 'INFO')],
                         self._by_request(loser))
        refused = self._ours()[-1]['payload']
        self.assertEqual('1.1', refused['nova_object.version'])
        refused = refused['nova_object.data']
        self.assertIsNone(refused['gate'])
        self.assertEqual(409, refused['code'])
        self.assertEqual(loser.body['conflictingRequest']['message'],
                         refused['reason'])
        self._wait_for_state_change(server, 'ACTIVE')

    def test_loser_before_the_move_is_refused_without_a_gate(self):
        server = self._buried()
        loser = []
        real_claim = nova_cell0_rows.claim

        def loser_reads_the_claimed_server(*args, **kwargs):
            real_claim(*args, **kwargs)
            if not loser:
                loser.append(None)
                loser[0] = self._rebuild(server['id'])
        self.useFixture(fixtures.MonkeyPatch(CELL0_ROWS + 'claim',
                                             loser_reads_the_claimed_server))
        self.notifier.reset()
        self._rebuild(server['id'])
        self.assertEqual(409, loser[0].status, loser[0].body)
        self.assertEqual([('cell0_rebuild.rebuild.refused', 'INFO')],
                         self._by_request(loser[0]))
        refused, = [n['payload']['nova_object.data'] for n in self._ours()
                    if n['event_type'] == 'cell0_rebuild.rebuild.refused']
        self.assertIsNone(refused['gate'])
        self.assertEqual(loser[0].body['conflictingRequest']['message'],
                         refused['reason'])

    def test_server_deleted_while_it_moves_is_abandoned(self):
        server = self._buried()
        real_destroy = nova_cell0_rows.destroy_cell0_instance

        def deleted_once_unmapped(*args, **kwargs):
            destroyed = real_destroy(*args, **kwargs)
            self.api.delete_server(server['id'])
            return destroyed
        self.useFixture(fixtures.MonkeyPatch(
            CELL0_ROWS + 'destroy_cell0_instance', deleted_once_unmapped))
        spec_id = nova_objects.RequestSpec.get_by_instance_uuid(
            self.admin_context, server['id']).id
        self.notifier.reset()
        resp = self._rebuild(server['id'])
        self.assertEqual([('cell0_rebuild.rebuild.start', 'INFO'),
                          ('cell0_rebuild.rebuild.abandoned', 'INFO')],
                         self._by_request(resp))
        self._wait_until_deleted(server)
        run_ids = {'instance_uuid': server['id'],
                   'request_id': resp.headers['x-openstack-request-id'],
                   'reservation_id': server[
                       'OS-EXT-SRV-ATTR:reservation_id'],
                   'request_spec_id': spec_id}
        self._verify('cell0_rebuild-rebuild-abandoned', self._ours()[-1],
                     run_ids)


class NotificationSettingsTest(base.Cell0RebuildTestCase):

    def _rebuilt(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self.notifier.reset()
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        return [n['event_type'] for n in self.notifier.versioned_notifications
                if n['event_type'].startswith('cell0_rebuild.')]

    def test_none_when_only_unversioned_notifications_are_sent(self):
        self.flags(notification_format='unversioned', group='notifications')
        self.assertEqual([], self._rebuilt())
        self.assertNotIn('cell0_rebuild', repr(self.notifier.notifications))

    def test_sent_when_versioned_only(self):
        self.flags(notification_format='versioned', group='notifications')
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.end'], self._rebuilt())

    def test_a_notifier_failure_does_not_fail_the_rebuild(self):
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_notifications.send',
            side_effect=RuntimeError('the notification bus is down')))
        self.assertEqual([], self._rebuilt())


class BrokerOutageTest(base.Cell0RebuildTestCase):
    """A hung broker never holds a rebuild request for long.

    oslo.messaging's real rabbit driver publishes to a local broker
    (silent_broker) that answers, then hangs: connections stay open, the
    port accepts, nothing is answered, as in a RabbitMQ outage.
    """

    #: What the test allows the request, generously: the default
    #: notification_timeout (2 s) once, and a loaded machine.
    BOUND = 30

    def setUp(self):
        super().setUp()
        self.broker = silent_broker.SilentBroker()
        self.addCleanup(self.broker.stop)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.notifications.sender.SENDER',
            sender.BackgroundSender()))
        # Last cleanup first: the broker answers again, and what the sender
        # still holds is sent before the next test.
        self.addCleanup(sender.SENDER.wait_until_idle, self.BOUND)
        self.addCleanup(self.broker.answer_again)

    def _real_notifier(self):
        """Nova's notifier, as nova.rpc.init builds it, on the broker."""
        transport = oslo_messaging.get_notification_transport(
            nova_conf.CONF, url=self.broker.url)
        self.addCleanup(transport.cleanup)
        notifier = oslo_messaging.Notifier(
            transport, driver='messagingv2',
            serializer=rpc.RequestContextSerializer(
                rpc.JsonPayloadSerializer()),
            topics=['versioned_notifications'])
        self.useFixture(fixtures.MonkeyPatch('nova.rpc.NOTIFIER', notifier))
        # A connection is pooled, as in a nova-api that ran for a while.
        rpc.get_versioned_notifier('nova-api:warm-up').info(
            self.admin_context, 'warm.up', {})
        self.assertEqual(1, len(self.broker.bodies))

    def _sent(self):
        return [event for body in self.broker.bodies
                for event in ('cell0_rebuild.rebuild.start',
                              'cell0_rebuild.rebuild.end')
                if event.encode() in body]

    def test_rebuild_answers_while_the_broker_hangs(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        casts = self._record_casts()
        self._real_notifier()
        self.broker.fall_silent()

        answered = threading.Event()
        answers = []

        def rebuild():
            answers.append(self._rebuild(server['id']))
            answered.set()
        threading.Thread(target=rebuild, daemon=True).start()
        self.assertTrue(answered.wait(self.BOUND),
                        'no answer within %s s' % self.BOUND)
        self.assertEqual(202, answers[0].status, answers[0].body)
        # The rebuild went ahead: the conductor has the server.
        self.assertEqual([server['id']], casts)
        self.assertEqual([], self._sent())

        # Once the broker answers again, what was held is delivered, in
        # order, and Nova's own notifications (which wait for ever) let
        # the build finish.
        self.broker.answer_again()
        self.assertTrue(sender.SENDER.wait_until_idle(self.BOUND))
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.end'], self._sent())
        self._wait_for_state_change(server, 'ACTIVE')
