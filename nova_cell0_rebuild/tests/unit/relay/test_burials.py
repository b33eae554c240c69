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

"""Reading Nova's burial notification, and what is refused before the
databases are read. The verdicts of the gates on real Nova databases are in
``tests/functional/test_aardvark_relay.py``.
"""

from nova import exception as nova_exception
import testtools

from nova_cell0_rebuild.relay import burials
from nova_cell0_rebuild.tests import nova_notices

UUID = '3f1d2c4b-5a69-4788-9a0b-1c2d3e4f5a6b'
AGG1 = 'a1a1a1a1-0000-4000-8000-000000000001'
AGG2 = 'a2a2a2a2-0000-4000-8000-000000000002'


class ReadNoticeTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_notices.NovaNotices())

    def test_what_nova_sends(self):
        notice = burials.read_notice(self.nova.build_instances_error(UUID))
        self.assertEqual(UUID, notice.instance_uuid)
        self.assertEqual('NoValidHost', notice.exception)
        self.assertEqual(UUID, notice.request_spec['instance_uuid'])
        self.assertEqual(512, burials._data(
            notice.request_spec['flavor'])['memory_mb'])
        self.assertEqual(nova_notices.IMAGE,
                         burials._image_uuid(notice.request_spec))

    def test_what_a_cloud_sends(self):
        # The scheduler's NoValidHost as the conductor receives it.
        received = nova_notices.received_over_rpc(nova_exception.NoValidHost(
            reason='There are not enough hosts available.'))
        self.assertIsInstance(received, nova_exception.NoValidHost)
        notice = burials.read_notice(self.nova.build_instances_error(
            UUID, error=received))
        self.assertEqual('NoValidHost_Remote', notice.exception)

    def test_aggregates_first_item_split(self):
        notice = burials.read_notice(self.nova.build_instances_error(
            UUID, aggregates=['%s,%s' % (AGG1, AGG2), 'other']))
        self.assertEqual([AGG1, AGG2],
                         burials._aggregates(notice.request_spec))

    def test_no_destination_no_aggregates(self):
        notice = burials.read_notice(self.nova.build_instances_error(UUID))
        self.assertIsNone(burials._aggregates(notice.request_spec))
        # A destination (a host asked for) without aggregates.
        notice = burials.read_notice(self.nova.build_instances_error(
            UUID, aggregates=[]))
        self.assertIsNone(burials._aggregates(notice.request_spec))

    def test_a_payload_without_a_server(self):
        self.assertRaises(burials.NotAnnounced, burials.read_notice, {})
        self.assertRaises(burials.NotAnnounced, burials.read_notice, None)


class JudgeWithoutDatabasesTest(testtools.TestCase):
    """What is refused before any database is read (there is none here)."""

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_notices.NovaNotices())

    def _judge(self, payload):
        return burials.judge(None, None, burials.read_notice(payload))

    def test_another_failure_is_not_announced(self):
        payload = self.nova.build_instances_error(
            UUID, error=nova_exception.MaxRetriesExceeded(reason='x'))
        exc = self.assertRaises(burials.NotAnnounced, self._judge, payload)
        self.assertIn('MaxRetriesExceeded, not NoValidHost', str(exc))

    def _past_the_failure(self, error):
        """Judge a burial by *error* with no RequestSpec: refused for the
        RequestSpec only if the failure was accepted.
        """
        payload = self.nova.build_instances_error(UUID, error=error)
        payload['nova_object.data']['request_spec'] = None
        return str(self.assertRaises(burials.NotAnnounced, self._judge,
                                     payload))

    def test_no_valid_host_is_accepted(self):
        self.assertIn('no RequestSpec', self._past_the_failure(
            nova_exception.NoValidHost(reason='x')))

    def test_no_valid_host_received_over_rpc_is_accepted(self):
        self.assertIn('no RequestSpec', self._past_the_failure(
            nova_notices.received_over_rpc(
                nova_exception.NoValidHost(reason='x'))))

    def test_another_failure_received_over_rpc_is_not_announced(self):
        self.assertIn('MaxRetriesExceeded_Remote, not NoValidHost',
                      self._past_the_failure(nova_notices.received_over_rpc(
                          nova_exception.MaxRetriesExceeded(reason='x'))))

    def test_the_accepted_names(self):
        self.assertEqual({'NoValidHost', 'NoValidHost_Remote'},
                         burials.ANNOUNCED_FAILURES)

    def test_no_request_spec_is_not_announced(self):
        payload = self.nova.build_instances_error(UUID)
        payload['nova_object.data']['request_spec'] = None
        exc = self.assertRaises(burials.NotAnnounced, self._judge, payload)
        self.assertIn('no RequestSpec', str(exc))
