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

"""The relay's endpoint: what it acknowledges, requeues and publishes."""

import fixtures
from oslo_db import exception as db_exc
import oslo_messaging
import testtools

from nova_cell0_rebuild.relay import aardvark_events
from nova_cell0_rebuild.relay import burials
from nova_cell0_rebuild.relay import listener

UUID = '3f1d2c4b-5a69-4788-9a0b-1c2d3e4f5a6b'
HANDLED = oslo_messaging.NotificationResult.HANDLED
REQUEUE = oslo_messaging.NotificationResult.REQUEUE
BURIAL = aardvark_events.Burial(
    instance_uuid=UUID, project_id='p', request_spec_id=3,
    flavor={'vcpus': 1, 'memory_mb': 64, 'root_gb': 1, 'ephemeral_gb': 0,
            'swap': 0}, image_uuid='image')


def _payload(uuid=UUID):
    return {'nova_object.data': {
        'instance_uuid': uuid, 'request_spec': None,
        'reason': {'nova_object.data': {'exception': 'NoValidHost'}}}}


class RecordingNotifier(object):

    def __init__(self):
        self.sent = []

    def error(self, ctxt, event_type, payload):
        self.sent.append(('error', event_type))

    def info(self, ctxt, event_type, payload):
        self.sent.append(('info', event_type))


class EndpointTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.announced = []
        self.log = self.useFixture(fixtures.FakeLogger())

    def _endpoint(self, judge):
        return listener.BurialEndpoint(judge, self.announced.append,
                                       requeue_pause=0)

    def _error(self, endpoint, payload=None, message_id='m'):
        return endpoint.error({}, 'nova-conductor:host',
                              burials.EVENT_TYPE, payload or _payload(),
                              {'message_id': message_id, 'timestamp': 't'})

    def test_announced(self):
        judged = []

        def judge(notice):
            judged.append(notice.instance_uuid)
            return BURIAL
        self.assertEqual(HANDLED, self._error(self._endpoint(judge)))
        self.assertEqual([UUID], judged)
        self.assertEqual([BURIAL], self.announced)

    def test_delivered_again_is_announced_once(self):
        endpoint = self._endpoint(lambda notice: BURIAL)
        for _ in range(2):
            self.assertEqual(HANDLED, self._error(endpoint))
        self.assertEqual([BURIAL], self.announced)
        self.assertIn('%s in cell0 delivered again while it was announced, '
                      'or after: not announced twice' % UUID,
                      self.log.output)
        # Another notification of the same server is another burial.
        self.assertEqual(HANDLED, self._error(endpoint, message_id='m2'))
        self.assertEqual([BURIAL, BURIAL], self.announced)

    def test_without_a_message_id_every_delivery_is_announced(self):
        endpoint = self._endpoint(lambda notice: BURIAL)
        for _ in range(2):
            self._error(endpoint, message_id=None)
        self.assertEqual([BURIAL, BURIAL], self.announced)

    def test_the_oldest_announced_are_forgotten(self):
        self.useFixture(fixtures.MockPatchObject(listener, 'REMEMBERED', 2))
        endpoint = self._endpoint(lambda notice: BURIAL)
        for message_id in ('a', 'b', 'c', 'a', 'c'):
            self._error(endpoint, message_id=message_id)
        # 'a' was forgotten when 'c' came: announced again; 'c' was not.
        self.assertEqual(4, len(self.announced))

    def test_not_announced_is_acknowledged(self):
        def judge(notice):
            raise burials.NotAnnounced('refused by gate personality')
        self.assertEqual(HANDLED, self._error(self._endpoint(judge)))
        self.assertEqual([], self.announced)
        self.assertIn('%s in cell0 not announced to Aardvark: refused by '
                      'gate personality' % UUID, self.log.output)

    def test_database_unreachable_is_requeued(self):
        for error in (db_exc.DBConnectionError('gone'),
                      db_exc.DBDeadlock('deadlock')):
            def judge(notice, error=error):
                raise error
            self.assertEqual(REQUEUE, self._error(self._endpoint(judge)))
        self.assertEqual([], self.announced)

    def test_any_other_error_is_dropped_not_looped(self):
        def judge(notice):
            raise RuntimeError('bug')
        self.assertEqual(HANDLED, self._error(self._endpoint(judge)))
        self.assertEqual([], self.announced)

    def test_filter_takes_only_the_build_instances_error(self):
        rule = listener.BurialEndpoint.filter_rule
        for event_type, wanted in (
                ('compute_task.build_instances.error', True),
                ('compute_task.build_instances.errorx', False),
                ('compute_task.rebuild_server.error', False),
                ('compute_taskXbuild_instances.error', False)):
            self.assertEqual(wanted, rule.match(
                {}, 'nova-conductor:h', event_type, {}, {}), event_type)


class AnnouncerTest(testtools.TestCase):

    def test_order_and_pause(self):
        notifier = RecordingNotifier()
        pauses = []
        listener.Announcer(notifier, 'master', 2.5, sleep=pauses.append)(
            BURIAL)
        self.assertEqual([('error', 'scheduler.select_destinations.error'),
                          ('info', 'instance.update')], notifier.sent)
        self.assertEqual([2.5], pauses)
