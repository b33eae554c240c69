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

import datetime
from unittest import mock

import fixtures
from nova import context as nova_context
from oslo_db import exception as db_exc
import oslo_messaging
from oslo_utils import timeutils
import testtools

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.relay import aardvark_events
from nova_cell0_rebuild.relay import burials
from nova_cell0_rebuild.relay import ledger as relay_ledger
from nova_cell0_rebuild.relay import listener
from nova_cell0_rebuild.tests.unit import base as unit_base

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


class LedgerEndpointTest(unit_base.DBTestCase):
    """Two relays of a pool (or one, restarted) share the ledger."""

    def setUp(self):
        super().setUp()
        self.announced = []
        self.log = self.useFixture(fixtures.FakeLogger())
        self.context = nova_context.get_admin_context()

    def _relay(self, owner, lease=60):
        ledger = relay_ledger.Ledger(lambda: self.context, lease, owner)
        return listener.BurialEndpoint(lambda notice: BURIAL,
                                       self.announced.append,
                                       requeue_pause=0, ledger=ledger)

    def _error(self, endpoint, message_id='m'):
        return endpoint.error({}, 'nova-conductor:host',
                              burials.EVENT_TYPE, _payload(),
                              {'message_id': message_id, 'timestamp': 't'})

    def _row(self, message_id='m'):
        with db_api.reader(self.context) as session:
            return session.query(models.RelayAnnouncement).filter_by(
                instance_uuid=UUID, message_id=message_id).one()

    def test_delivered_again_to_another_relay_is_announced_once(self):
        self.assertEqual(HANDLED, self._error(self._relay('relay-1')))
        # The acknowledgement was lost: RabbitMQ delivers it to relay-2,
        # or to relay-1 restarted (nothing in memory).
        for relay in (self._relay('relay-2'), self._relay('relay-1')):
            self.assertEqual(HANDLED, self._error(relay))
        self.assertEqual([BURIAL], self.announced)
        self.assertEqual(('announced', 'relay-1'),
                         (self._row().state, self._row().owner))
        self.assertIn('announced already (by this relay or another): not '
                      'announced twice', self.log.output)
        # Another notification of the server is another burial.
        self.assertEqual(HANDLED, self._error(self._relay('relay-2'),
                                              message_id='m2'))
        self.assertEqual([BURIAL, BURIAL], self.announced)

    def test_held_by_a_relay_that_died_then_its_lease_runs_out(self):
        dead = relay_ledger.Ledger(lambda: self.context, 60, 'relay-1')
        outcome, _claim = dead.claim(UUID, 'm')
        self.assertEqual(dead.CLAIMED, outcome)
        # relay-1 died mid-announcement: while its lease holds, the
        # notification is asked for again, then announced by relay-2.
        relay = self._relay('relay-2')
        self.assertEqual(REQUEUE, self._error(relay))
        self.assertEqual([], self.announced)
        self.assertIn('being announced by another relay', self.log.output)
        with db_api.writer(self.context) as session:
            session.query(models.RelayAnnouncement).update(
                {'lease_expires_at': timeutils.utcnow() -
                 datetime.timedelta(seconds=1)})
        # The requeued delivery is judged again, not taken as a duplicate.
        self.assertEqual(HANDLED, self._error(relay))
        self.assertEqual([BURIAL], self.announced)
        self.assertEqual(('announced', 'relay-2', 2),
                         (self._row().state, self._row().owner,
                          self._row().lease_token))
        self.assertIn('its lease ran out); announced again', self.log.output)

    def test_ledger_unreachable_is_requeued_then_announced(self):
        relay = self._relay('relay-1')
        with mock.patch.object(
                objects.RelayAnnouncement, '_claim_in_db',
                side_effect=db_exc.DBConnectionError('gone')):
            self.assertEqual(REQUEUE, self._error(relay))
        self.assertEqual([], self.announced)
        self.assertEqual(HANDLED, self._error(relay))
        self.assertEqual([BURIAL], self.announced)

    def test_galera_deadlock_is_a_lost_race(self):
        # Refused at each retry: another relay's write won; asked again.
        relay = self._relay('relay-1')
        with mock.patch.object(
                objects.RelayAnnouncement, '_claim_in_db',
                side_effect=db_exc.DBDeadlock('1213')):
            self.assertEqual(REQUEUE, self._error(relay))
        self.assertEqual([], self.announced)

    def test_record_of_announced_failing_still_acknowledges(self):
        relay = self._relay('relay-1')
        with mock.patch.object(objects.RelayAnnouncement, '_mark_in_db',
                               side_effect=db_exc.DBConnectionError('gone')):
            self.assertEqual(HANDLED, self._error(relay))
        self.assertEqual([BURIAL], self.announced)
        self.assertEqual('announcing', self._row().state)
        self.assertIn('announced, but not recorded as announced',
                      self.log.output)
