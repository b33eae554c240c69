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

"""cell0_rebuild.wait.<phase>: event types, priorities and payloads."""

import datetime
import types
from unittest import mock

import fixtures

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.notifications import sender
from nova_cell0_rebuild.notifications import wait as notifications
from nova_cell0_rebuild.tests.unit import base

UUID = '178b0921-8f85-4257-88b6-2e743b5a975c'
QUEUED = datetime.datetime(2026, 12, 7, 3, 0, 0)
DEADLINE = datetime.datetime(2026, 12, 7, 9, 0, 0)


def _wait(**fields):
    values = dict(instance_uuid=UUID, project_id='project', user_id='user',
                  source='metadata', queued_at=QUEUED, deadline=DEADLINE,
                  attempts=2, shape_key='a' * 64)
    values.update(fields)
    return types.SimpleNamespace(**values)


class NotifyWaitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.sent = []
        self.enabled = self.useFixture(fixtures.MockPatchObject(
            nova_notifications, 'versioned_enabled',
            return_value=True)).mock
        self.useFixture(fixtures.MockPatchObject(
            nova_notifications, 'send', side_effect=self._send))
        self.context = mock.sentinel.context

    def _send(self, context, priority, event_type, payload, retry=None):
        self.sent.append((priority, event_type, payload))

    def _heard(self):
        self.assertTrue(sender.SENDER.wait_until_idle(10))
        return self.sent

    def test_start(self):
        notifications.notify_start(self.context, _wait())
        [(priority, event_type, payload)] = self._heard()
        self.assertEqual(('info', 'cell0_rebuild.wait.start'),
                         (priority, event_type))
        self.assertEqual('Cell0RebuildWaitPayload',
                         payload['nova_object.name'])
        self.assertEqual('nova_cell0_rebuild',
                         payload['nova_object.namespace'])
        data = payload['nova_object.data']
        self.assertEqual(
            {'instance_uuid': UUID, 'project_id': 'project',
             'user_id': 'user', 'source': 'metadata',
             'queued_at': '2026-12-07T03:00:00Z',
             'deadline': '2026-12-07T09:00:00Z', 'attempts': 2}, data)

    def test_attempt_dispatched(self):
        notifications.notify_attempt(self.context, _wait(), 'req-1')
        [(_p, event_type, payload)] = self._heard()
        self.assertEqual('cell0_rebuild.wait.attempt', event_type)
        data = payload['nova_object.data']
        self.assertEqual(('req-1', 'a' * 64, 'dispatched', None, None, None),
                         (data['request_id'], data['shape_key'],
                          data['outcome'], data['gate'], data['reason'],
                          data['code']))

    def test_attempt_refused_by_a_gate(self):
        refusal = exception.GateRefused('lock', 409, 'Server is locked')
        notifications.notify_attempt(self.context, _wait(), 'req-2',
                                     refusal=refusal)
        data = self._heard()[0][2]['nova_object.data']
        self.assertEqual(('refused', 'lock', 'Server is locked', 409),
                         (data['outcome'], data['gate'], data['reason'],
                          data['code']))

    def test_attempt_refused_without_a_gate(self):
        refusal = exception.RequestRefused(409, 'in progress')
        notifications.notify_attempt(self.context, _wait(), 'req-3',
                                     refusal=refusal)
        data = self._heard()[0][2]['nova_object.data']
        self.assertEqual(('refused', None, 409),
                         (data['outcome'], data['gate'], data['code']))

    def test_end(self):
        notifications.notify_end(self.context, _wait(), notifications.DELETED)
        [(_p, event_type, payload)] = self._heard()
        self.assertEqual('cell0_rebuild.wait.end', event_type)
        self.assertEqual('Cell0RebuildWaitEndPayload',
                         payload['nova_object.name'])
        self.assertEqual('deleted', payload['nova_object.data']['reason'])

    def test_nothing_without_versioned_notifications(self):
        self.enabled.return_value = False
        notifications.notify_start(self.context, _wait())
        self.assertEqual([], self._heard())

    def test_a_failing_send_is_only_logged(self):
        nova_notifications.send.side_effect = RuntimeError('broker gone')
        notifications.notify_end(self.context, _wait(),
                                 notifications.REBUILT)
        self.assertEqual([], self._heard())
