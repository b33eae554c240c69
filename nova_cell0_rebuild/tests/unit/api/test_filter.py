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

"""The filter's create flow, in front of a stand-in for Nova."""

from unittest import mock

import fixtures

from nova import context as nova_context
from oslo_serialization import jsonutils
import webob
import webob.dec

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import filter as cell0_filter
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild import system_metadata
from nova_cell0_rebuild.tests.unit import base

SERVER_ID = 'c9a2b6f4-3e1d-4a8b-9c7d-1e2f3a4b5c6d'
PROJECT = 'b0e2f1d4a3c5476d8e9f0a1b2c3d4e5f'


class FakeNova(object):
    """Answers like Nova and remembers what the filter let through."""

    def __init__(self, test, status=202, body=None):
        self.test = test
        self.status = status
        self.body = body if body is not None else {
            'server': {'id': SERVER_ID}}
        self.calls = []

    @webob.dec.wsgify
    def __call__(self, req):
        # What the filter recorded is already there when Nova acts.
        self.calls.append((req.method, req.path_info, req.body,
                           self.test.pending_record()))
        resp = webob.Response(status=self.status)
        resp.json = self.body
        return resp


class FilterTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        # No follow-up runs in the background here: its first step runs at
        # once, in the test's thread; the rest is left to the tests that
        # look at it.
        self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'when_placed', side_effect=self._first_only))
        self.context = nova_context.RequestContext('user', PROJECT,
                                                   is_admin=False)
        self.reservation = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_servers.get_reservation_id',
            return_value='r-reserved')).mock

    @staticmethod
    def _first_only(context, instance_uuids, on_placed, first=None):
        if first is not None:
            first()

    def pending_record(self):
        try:
            return objects.CreateRecord.get_by_request_id(
                self.context, 'req-1')
        except exception.CreateRecordNotFound:
            return None

    def _request(self, path='/servers', method='POST', body=None,
                 version='2.1', script_name='/v2.1'):
        req = webob.Request.blank(path, method=method)
        req.script_name = script_name
        if body is not None:
            req.body = (body if isinstance(body, bytes)
                        else jsonutils.dump_as_bytes(body))
        if version:
            req.headers['OpenStack-API-Version'] = 'compute %s' % version
        req.environ['nova.context'] = self.context
        req.environ['openstack.request_id'] = 'req-1'
        return req

    def _send(self, req, nova=None):
        nova = nova or FakeNova(self)
        app = cell0_filter.filter_factory({})(nova)
        return req.get_response(app), nova

    def _create_body(self, **server):
        server.setdefault('name', 'vm')
        server.setdefault('imageRef', 'image')
        server.setdefault('flavorRef', '1')
        return {'server': server}


class TestPassThrough(FilterTestCase):

    def test_other_requests_are_not_touched(self):
        for method, path in (('GET', '/servers'),
                             ('GET', '/servers/%s' % SERVER_ID),
                             ('DELETE', '/servers/%s' % SERVER_ID),
                             ('PUT', '/servers/%s' % SERVER_ID),
                             ('POST', '/servers/%s/action' % SERVER_ID),
                             ('POST', '/servers/detail'),
                             ('POST', '/os-keypairs')):
            resp, nova = self._send(self._request(path, method, body=b'x'))
            self.assertEqual([(method, path, b'x', None)], nova.calls)
        self.assertIsNone(self.pending_record())

    def test_unreadable_create_is_left_to_nova(self):
        for body in (b'{not json', b'[]', b'{"server": 3}', b'{}'):
            resp, nova = self._send(self._request(body=body),
                                    FakeNova(self, status=400, body={}))
            self.assertEqual(400, resp.status_int)
            self.assertEqual(1, len(nova.calls))
        self.assertIsNone(self.pending_record())

    def test_bad_version_header_is_left_to_nova(self):
        for version in ('abc', '2.9999', '3.0'):
            resp, nova = self._send(
                self._request(body=self._create_body(), version=version),
                FakeNova(self, status=400, body={}))
            self.assertEqual(1, len(nova.calls))
            self.assertIsNone(nova.calls[0][3])


class TestCreateCapture(FilterTestCase):

    def test_record_written_before_nova_then_accepted(self):
        networks = [{'uuid': SERVER_ID, 'fixed_ip': '10.0.0.3'}]
        resp, nova = self._send(self._request(
            body=self._create_body(networks=networks)))
        self.assertEqual(202, resp.status_int)
        pending = nova.calls[0][3]
        self.assertEqual('pending', pending.status)
        self.assertEqual(networks, pending.requested_networks)
        self.assertEqual(0, pending.personality_files)
        self.assertEqual(('user', PROJECT, '2.1'),
                         (pending.user_id, pending.project_id,
                          pending.microversion))
        record = self.pending_record()
        self.assertEqual('accepted', record.status)
        self.assertEqual(SERVER_ID, record.instance_uuid)
        # One server: found by its uuid, no reservation lookup.
        self.assertIsNone(record.reservation_id)
        self.reservation.assert_not_called()

    def test_multi_create_records_the_reservation(self):
        self._send(self._request(body=self._create_body(min_count=2)))
        record = self.pending_record()
        self.assertEqual(SERVER_ID, record.instance_uuid)
        self.assertEqual('r-reserved', record.reservation_id)

    def test_refused_create_leaves_no_record(self):
        for status in (400, 403, 404, 409, 413, 500):
            resp, nova = self._send(
                self._request(body=self._create_body()),
                FakeNova(self, status=status, body={'badRequest': {}}))
            self.assertEqual(status, resp.status_int)
            self.assertIsNotNone(nova.calls[0][3])
            self.assertIsNone(self.pending_record())

    def test_nova_raising_leaves_no_record(self):
        class Boom(Exception):
            pass

        @webob.dec.wsgify
        def broken(req):
            raise Boom()
        app = cell0_filter.filter_factory({})(broken)
        self.assertRaises(Boom, self._request(
            body=self._create_body()).get_response, app)
        self.assertIsNone(self.pending_record())

    def test_legacy_v2_create_is_recorded_as_2_0(self):
        self._send(self._request(body=self._create_body(), version=None,
                                 script_name='/v2'))
        self.assertEqual('2.0', self.pending_record().microversion)

    def test_no_version_header_is_2_1_and_latest_is_max(self):
        self._send(self._request(body=self._create_body(), version=None))
        self.assertEqual('2.1', self.pending_record().microversion)
        self.pending_record().destroy()
        self._send(self._request(body=self._create_body(),
                                 version='latest'))
        self.assertEqual('2.104', self.pending_record().microversion)

    def test_project_id_in_url_and_volumes_boot(self):
        for path in ('/%s/servers' % PROJECT, '/os-volumes_boot'):
            self._send(self._request(path, body=self._create_body()))
            self.assertIsNotNone(self.pending_record())
            self.pending_record().destroy()

    def test_reservation_id_answer(self):
        self._send(self._request(body=self._create_body(min_count=2)),
                   FakeNova(self, body={'reservation_id': 'r-given'}))
        record = self.pending_record()
        self.assertIsNone(record.instance_uuid)
        self.assertEqual('r-given', record.reservation_id)
        self.reservation.assert_not_called()

    def _follow_ups(self, siblings):
        self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'get_instance_uuids_by_reservation',
            return_value=siblings))
        return self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'when_placed')).mock

    def test_one_new_server_is_followed_until_placed(self):
        when_placed = self._follow_ups([])
        self._send(self._request(body=self._create_body()))
        when_placed.assert_called_once_with(mock.ANY, [SERVER_ID], mock.ANY,
                                            first=mock.ANY)
        # Accepted in the background, after Nova's answer.
        self.assertEqual('pending', self.pending_record().status)
        when_placed.call_args.kwargs['first']()
        self.assertEqual(('accepted', SERVER_ID),
                         (self.pending_record().status,
                          self.pending_record().instance_uuid))

    def test_new_servers_are_followed_until_placed(self):
        when_placed = self._follow_ups([SERVER_ID, 'sibling'])
        self._send(self._request(body=self._create_body(max_count=2)))
        # Found through the reservation, so multi-create siblings are too.
        when_placed.assert_called_once_with(
            mock.ANY, sorted(['sibling', SERVER_ID]), mock.ANY, first=None)

    def test_reservation_answer_follows_every_sibling(self):
        when_placed = self._follow_ups(['u1', 'u2'])
        body = self._create_body(min_count=2, return_reservation_id=True)
        self._send(self._request(body=body),
                   FakeNova(self, body={'reservation_id': 'r-given'}))
        when_placed.assert_called_once_with(mock.ANY, ['u1', 'u2'],
                                            mock.ANY, first=None)

    @mock.patch.object(nova_servers, 'still_in_cell0_or_building',
                       return_value=[])
    @mock.patch.object(nova_servers, 'set_cell_system_metadata')
    def test_personality_marker_once_placed(self, set_sysmeta, waiting):
        when_placed = self._follow_ups([SERVER_ID])
        files = [{'path': '/a', 'contents': 'YQ=='},
                 {'path': '/b', 'contents': 'Yg=='}]
        self._send(self._request(body=self._create_body(personality=files)))
        self.assertEqual(2, self.pending_record().personality_files)
        on_placed = when_placed.call_args[0][2]
        cell0 = mock.Mock(uuid=nova_servers.CELL0_UUID)
        on_placed(self.context, SERVER_ID, cell0)
        set_sysmeta.assert_called_once_with(
            self.context, cell0, SERVER_ID,
            system_metadata.CREATED_WITH_PERSONALITY_FILES, 'True')
        # Buried in cell0: the record stays for a rebuild.
        waiting.assert_not_called()
        self.assertIsNotNone(self.pending_record())

    @mock.patch.object(nova_servers, 'still_in_cell0_or_building')
    @mock.patch.object(nova_servers, 'set_cell_system_metadata')
    def test_record_goes_once_every_sibling_landed(self, set_sysmeta,
                                                   waiting):
        when_placed = self._follow_ups([SERVER_ID, 'sibling'])
        self._send(self._request(body=self._create_body(min_count=2)))
        on_placed = when_placed.call_args[0][2]
        cell1 = mock.Mock(uuid='cell1')
        waiting.return_value = ['sibling']
        on_placed(self.context, SERVER_ID, cell1)
        self.assertIsNotNone(self.pending_record())
        waiting.return_value = []
        on_placed(self.context, 'sibling', cell1)
        self.assertIsNone(self.pending_record())
        # No personality files: no marker.
        set_sysmeta.assert_not_called()

    def test_completion_failure_keeps_novas_answer(self):
        self.reservation.side_effect = RuntimeError('cell down')
        resp, nova = self._send(self._request(
            body=self._create_body(min_count=2)))
        self.assertEqual(202, resp.status_int)
        # The record stays, pending, and is found by its request id.
        self.assertEqual('pending', self.pending_record().status)

    def test_record_that_cannot_be_written_stops_the_create(self):
        self.conf.set_override('connection', 'sqlite:////nonexistent/x.db',
                               group='cell0_rebuild')
        resp, nova = self._send(self._request(body=self._create_body()))
        self.assertEqual(503, resp.status_int)
        self.assertEqual([], nova.calls)
        fault = resp.json['serviceUnavailable']
        self.assertEqual(503, fault['code'])
        self.assertIn('create record could not be written', fault['message'])
        self.assertEqual('compute 2.1', resp.headers['OpenStack-API-Version'])


class TestHistoryWriteBack(FilterTestCase):

    def setUp(self):
        super().setUp()
        self.materialise = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.tasks.server_history.materialise')).mock

    def test_only_instance_action_reads_write_back_first(self):
        paths = ['/servers/%s' % SERVER_ID, '/servers', '/servers/detail',
                 '/servers/%s/os-instance-actions' % SERVER_ID,
                 '/servers/%s/os-instance-actions/req-9' % SERVER_ID,
                 '/%s/servers/%s/os-instance-actions' % (PROJECT, SERVER_ID)]
        for path in paths:
            resp, nova = self._send(self._request(path, 'GET'),
                                    FakeNova(self, status=200))
            self.assertEqual(200, resp.status_int)
            self.assertEqual([('GET', path)],
                             [call[:2] for call in nova.calls])
        self.assertEqual(3, self.materialise.call_count)
        for call in self.materialise.call_args_list:
            self.assertEqual(SERVER_ID, call.args[1])
            self.assertIs(self.context, call.kwargs['reader'])

    def test_a_failed_write_back_still_answers(self):
        self.materialise.side_effect = RuntimeError('db blip')
        resp, nova = self._send(
            self._request('/servers/%s/os-instance-actions' % SERVER_ID,
                          'GET'), FakeNova(self, status=200))
        self.assertEqual(200, resp.status_int)
        self.assertEqual(1, len(nova.calls))
