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

"""notify_rebuild on Nova's notifier, heard as a reaper would hear it.

Nova's messaging is set up for real (``nova.rpc.init``) on oslo.messaging's
fake transport; a notification listener with the NotificationFilter of the
admin guide plays the reaper.
"""

import threading

import fixtures
from nova import context as nova_context
from nova import objects as nova_objects
from nova import rpc
import oslo_messaging
from oslo_messaging import conffixture

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.gates import base as gates_base
from nova_cell0_rebuild.notifications import payloads
from nova_cell0_rebuild.notifications import rebuild as notifications
from nova_cell0_rebuild.tests.unit import base

UUID = '178b0921-8f85-4257-88b6-2e743b5a975c'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
TOPIC = 'reaper_notifications'


class Reaper(object):
    """What the admin guide's reaper listens to."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^cell0_rebuild\.rebuild\..*')

    def __init__(self, expected):
        self.heard = []
        self.expected = expected
        self.done = threading.Event()

    def _hear(self, priority, publisher_id, event_type, payload):
        self.heard.append((priority, publisher_id, event_type, payload))
        if len(self.heard) >= self.expected:
            self.done.set()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._hear('info', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._hear('error', publisher_id, event_type, payload)


def _server():
    instance = nova_objects.Instance(
        uuid=UUID, project_id='project', user_id='user',
        reservation_id='r-npxv0e40')
    return gates_base.Cell0Server(context=None, instance=instance,
                                  mapping=None, cell0=None)


class _NotifierTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        nova_objects.register_all()
        self.context = nova_context.RequestContext(
            user_id='user', project_id='project', is_admin=False,
            request_id='req-5b6c791d-5709-4f36-8fbe-c3e02869e35d')
        self.server = _server()


class NotifyOverNovaTransportTest(_NotifierTestCase):

    def setUp(self):
        super().setUp()
        # oslo.messaging's options live on the global CONF only.
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.conf.set_override('transport_url', 'fake:///',
                               group='oslo_messaging_notifications')
        self.conf.set_override('driver', ['messagingv2'],
                               group='oslo_messaging_notifications')
        self.conf.set_override('versioned_notifications_topics',
                               ['versioned_notifications', TOPIC],
                               group='notifications')
        self.conf.set_override('host', 'api-host')
        for name in ('TRANSPORT', 'NOTIFICATION_TRANSPORT',
                     'LEGACY_NOTIFIER', 'NOTIFIER'):
            self.useFixture(fixtures.MonkeyPatch('nova.rpc.' + name, None))

    def _listen(self, expected):
        nova_notifications.init(self.conf)
        self.addCleanup(rpc.cleanup)
        reaper = Reaper(expected)
        listener = oslo_messaging.get_notification_listener(
            rpc.NOTIFICATION_TRANSPORT,
            [oslo_messaging.Target(topic=TOPIC)], [reaper])
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return reaper

    def test_reaper_hears_each_phase_on_its_topic(self):
        self.conf.set_override('notification_format', 'versioned',
                               group='notifications')
        reaper = self._listen(expected=4)
        # Not ours: the filter keeps it from the reaper.
        rpc.get_versioned_notifier('nova-api:api-host').info(
            self.context, 'instance.update', {})
        for phase in (notifications.START, notifications.END):
            notifications.notify_rebuild(
                self.context, phase, self.server, IMAGE, request_spec_id=7)
        notifications.notify_rebuild(
            self.context, notifications.ERROR, self.server, IMAGE,
            request_spec_id=7, fault=exception.MoveInProgress(uuid=UUID))
        notifications.notify_rebuild(
            self.context, notifications.REFUSED, self.server, IMAGE,
            request_spec_id=7,
            refusal=exception.GateRefused('quota', 403, 'Quota exceeded'))
        self.assertTrue(reaper.done.wait(10), reaper.heard)

        # One queue per priority (<topic>.info, <topic>.error): the order
        # holds within a priority only.
        heard = {(h[0], h[2]): h[3] for h in reaper.heard}
        self.assertEqual(
            ['cell0_rebuild.rebuild.start', 'cell0_rebuild.rebuild.end',
             'cell0_rebuild.rebuild.refused'],
            [h[2] for h in reaper.heard if h[0] == 'info'])
        self.assertIn(('error', 'cell0_rebuild.rebuild.error'), heard)
        self.assertEqual({'nova-api:api-host'}, {h[1] for h in reaper.heard})
        start = heard['info', 'cell0_rebuild.rebuild.start']
        self.assertEqual('Cell0RebuildPayload', start['nova_object.name'])
        self.assertEqual('nova_cell0_rebuild',
                         start['nova_object.namespace'])
        self.assertEqual(
            {'instance_uuid': UUID, 'project_id': 'project',
             'user_id': 'user', 'reservation_id': 'r-npxv0e40',
             'request_id': 'req-5b6c791d-5709-4f36-8fbe-c3e02869e35d',
             'image_uuid': IMAGE, 'request_spec_id': 7},
            start['nova_object.data'])
        fault = heard['error', 'cell0_rebuild.rebuild.error'][
            'nova_object.data']['fault']
        self.assertEqual('MoveInProgress',
                         fault['nova_object.data']['exception'])
        refused = heard['info', 'cell0_rebuild.rebuild.refused'][
            'nova_object.data']
        self.assertEqual(('quota', 403, 'Quota exceeded'),
                         (refused['gate'], refused['code'],
                          refused['reason']))

    def test_nothing_is_sent_when_only_unversioned_ones_are(self):
        self.conf.set_override('notification_format', 'unversioned',
                               group='notifications')
        reaper = self._listen(expected=1)
        self.assertFalse(nova_notifications.versioned_enabled())
        notifications.notify_rebuild(
            self.context, notifications.START, self.server, IMAGE,
            request_spec_id=7)
        self.assertFalse(reaper.done.wait(0.5), reaper.heard)


class Recorded(fixtures.Fixture):
    """Record what would be sent, with versioned notifications enabled."""

    def _setUp(self):
        self.sent = []
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_notifications.'
            'versioned_enabled', return_value=True))
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_notifications.send',
            side_effect=lambda ctxt, priority, event_type, payload, **kw:
            self.sent.append((priority, event_type, payload))))
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_notifications.'
            'request_spec_id', return_value=7))

    @property
    def event_types(self):
        return [event_type for _, event_type, _ in self.sent]


class RebuildNotificationsTest(_NotifierTestCase):

    def setUp(self):
        super().setUp()
        self.recorded = self.useFixture(Recorded())

    def _around(self):
        return notifications.rebuild_notifications(
            self.context, self.server, IMAGE, request_spec_id=7)

    def test_start_then_end(self):
        with self._around():
            self.assertEqual(['cell0_rebuild.rebuild.start'],
                             self.recorded.event_types)
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.end'],
                         self.recorded.event_types)

    def test_error_then_the_exception_again(self):
        def fail():
            with self._around():
                raise exception.MoveInProgress(uuid=UUID)
        self.assertRaises(exception.MoveInProgress, fail)
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.error'],
                         self.recorded.event_types)
        priority, _, payload = self.recorded.sent[1]
        self.assertEqual('error', priority)
        self.assertEqual(7, payload['nova_object.data']['request_spec_id'])

    def test_refused_at_info_then_the_refusal_again(self):
        def lose():
            with self._around():
                raise exception.RequestRefused(409, 'in progress')
        self.assertRaises(exception.RequestRefused, lose)
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.refused'],
                         self.recorded.event_types)
        priority, _, payload = self.recorded.sent[1]
        self.assertEqual('info', priority)
        self.assertEqual({'gate': None, 'code': 409,
                          'reason': 'in progress'},
                         {key: payload['nova_object.data'][key]
                          for key in ('gate', 'code', 'reason')})

    def test_abandoned_not_end_when_the_server_was_deleted(self):
        with self._around() as outcome:
            outcome.server_deleted = True
        self.assertEqual(['cell0_rebuild.rebuild.start',
                          'cell0_rebuild.rebuild.abandoned'],
                         self.recorded.event_types)
        self.assertEqual('info', self.recorded.sent[1][0])

    def test_refused_1_0_has_an_empty_gate_for_none(self):
        payload = payloads.Cell0RebuildRefusedPayload.from_server(
            self.context, self.server, IMAGE, 7, gate=None, code=409,
            reason='in progress')
        primitive = payload.obj_to_primitive(target_version='1.0')
        self.assertEqual('1.0', primitive['nova_object.version'])
        self.assertEqual('', primitive['nova_object.data']['gate'])
        self.assertIsNone(
            payload.obj_to_primitive()['nova_object.data']['gate'])

    def test_no_error_when_the_process_is_stopping(self):
        def stop():
            with self._around():
                raise KeyboardInterrupt()
        self.assertRaises(KeyboardInterrupt, stop)
        self.assertEqual(['cell0_rebuild.rebuild.start'],
                         self.recorded.event_types)

    def test_a_send_failure_is_logged_not_raised(self):
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_notifications.send',
            side_effect=RuntimeError('bus down')))
        logs = self.useFixture(fixtures.FakeLogger())
        with self._around():
            pass
        self.assertIn('Could not send the cell0_rebuild.rebuild.start',
                      logs.output)

    def test_unknown_phase(self):
        self.assertRaises(ValueError, notifications.notify_rebuild,
                          self.context, 'finished', self.server)
