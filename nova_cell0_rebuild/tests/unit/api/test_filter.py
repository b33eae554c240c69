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
from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
import sqlalchemy as sa
import webob
import webob.dec

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import filter as cell0_filter
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests import microversions as mv
from nova_cell0_rebuild.tests import statements as sql
from nova_cell0_rebuild.tests.unit import base

SERVER_ID = 'c9a2b6f4-3e1d-4a8b-9c7d-1e2f3a4b5c6d'
SIBLING_ID = '0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6'
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
        self.context = nova_context.RequestContext('user', PROJECT,
                                                   is_admin=False)
        self.reservation = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_servers.get_reservation_id',
            return_value='r-reserved')).mock
        self.siblings = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_servers.'
            'waiting_servers_of_create',
            return_value=('r-reserved', [SIBLING_ID, SERVER_ID]))).mock

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
                             ('POST', '/servers/%s/action' % SERVER_ID),
                             ('POST', '/servers/detail'),
                             ('POST', '/os-keypairs')):
            resp, nova = self._send(self._request(path, method, body=b'x'))
            self.assertEqual([(method, path, b'x', None)], nova.calls)
        self.assertIsNone(self.pending_record())

    def test_update_of_a_server_no_move_holds_goes_to_nova(self):
        # PUT /servers/{id} is read only for the server's mapping (a move
        # of ours may hold it unbuilt: concurrent-edits); a server in a
        # cell, or not mapped, is Nova's business, body untouched.
        mapping = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_servers.get_mapping',
            return_value=None)).mock
        path = '/servers/%s' % SERVER_ID
        resp, nova = self._send(self._request(path, 'PUT', body=b'x'))
        self.assertEqual([('PUT', path, b'x', None)], nova.calls)
        self.assertEqual(SERVER_ID, mapping.call_args[0][1])
        self.assertIsNone(self.pending_record())

    def test_rebuild_whose_mapping_read_loses_the_database_is_503(self):
        # A Galera writer killed (HAProxy failing over): the filter's own
        # read of the server's mapping fails with DBConnectionError. Found
        # by tox -e cloud-galera: Nova's faultwrap answered 500.
        for message in self._messages_losing_the_database(
                '/servers/%s/action' % SERVER_ID, 'POST',
                {'rebuild': {'imageRef': 'image'}}):
            self.assertIn(SERVER_ID, message)

    def test_lock_whose_move_check_loses_the_database_names_the_lock(self):
        # The same failover during the check of an action refused while a
        # move holds the server: the answer names that action, not a
        # rebuild the client never asked for.
        for message in self._messages_losing_the_database(
                '/servers/%s/action' % SERVER_ID, 'POST', {'lock': None}):
            self.assertIn("'lock'", message)
            self.assertIn(SERVER_ID, message)
            self.assertNotIn('rebuilt', message)

    def _messages_losing_the_database(self, path, method, body):
        """The filter's answers when the mapping read loses the database.

        Asserts 503 for a lost connection and 409 for a deadlock, Nova
        never asked; yields each answer's message.
        """
        for error, status, key in (
                (db_exc.DBConnectionError('2013'), 503, 'serviceUnavailable'),
                (db_exc.DBDeadlock('1213'), 409, 'conflictingRequest')):
            self.useFixture(fixtures.MockPatch(
                'nova_cell0_rebuild.adapters.nova_servers.get_mapping',
                side_effect=error))
            resp, nova = self._send(self._request(
                path, method=method, body=body, version=mv.NOVA_MAX))
            self.assertEqual(status, resp.status_int, resp.body)
            self.assertEqual([], nova.calls)
            yield resp.json_body[key]['message']

    def test_update_whose_move_check_loses_the_database_is_not_500(self):
        for message in self._messages_losing_the_database(
                '/servers/%s' % SERVER_ID, 'PUT',
                {'server': {'name': 'renamed'}}):
            self.assertIn("'update'", message)
            self.assertIn(SERVER_ID, message)

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

    def test_multi_create_records_the_reservation_and_its_servers(self):
        self._send(self._request(body=self._create_body(min_count=2)))
        record = self.pending_record()
        self.assertEqual(SERVER_ID, record.instance_uuid)
        self.assertEqual('r-reserved', record.reservation_id)
        self.assertEqual(sorted([SERVER_ID, SIBLING_ID]),
                         record.server_uuids)
        # Looked up from the create's own project and start, by the
        # server Nova's answer names.
        context, project_id, since = self.siblings.call_args[0]
        self.assertEqual(PROJECT, project_id)
        self.assertIsNone(since.tzinfo)
        self.assertEqual({'reservation_id': None, 'first_uuid': SERVER_ID},
                         self.siblings.call_args[1])

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
        self.assertEqual(mv.NOVA_MAX, self.pending_record().microversion)

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
        self.assertEqual('r-reserved', record.reservation_id)
        self.assertEqual({'reservation_id': 'r-given', 'first_uuid': None},
                         self.siblings.call_args[1])
        self.reservation.assert_not_called()

    def _statements_after_nova(self, nova):
        """Run a create; the SQL our database saw after Nova answered."""
        statements = []
        answered = []

        class Answering(FakeNova):
            @webob.dec.wsgify
            def __call__(inner, req):
                resp = req.get_response(nova)
                answered.append(True)
                return resp

        def record(conn, cursor, statement, *args):
            verb = statement.split()[0].upper()
            # Transaction control (SQLite's BEGIN) is no statement of ours.
            if (answered and verb not in ('BEGIN', 'COMMIT', 'ROLLBACK')
                    and not sql.is_connection_ping(statement)):
                statements.append(verb)
        engine = db_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        record)
        self._send(self._request(body=self._create_body()),
                   Answering(self))
        return statements

    def test_one_server_is_accepted_in_the_request_with_one_update(self):
        statements = self._statements_after_nova(FakeNova(self))
        self.assertEqual(['UPDATE'], statements)
        # Accepted before the answer went out: nothing is left to run.
        self.assertEqual(('accepted', SERVER_ID),
                         (self.pending_record().status,
                          self.pending_record().instance_uuid))
        self.reservation.assert_not_called()

    def test_multi_create_is_accepted_in_the_request(self):
        self._send(self._request(body=self._create_body(max_count=2)))
        record = self.pending_record()
        self.assertEqual(('accepted', SERVER_ID, 'r-reserved'),
                         (record.status, record.instance_uuid,
                          record.reservation_id))
        self.siblings.assert_called_once()

    def test_one_server_create_looks_up_no_siblings(self):
        self._send(self._request(body=self._create_body()))
        self.assertIsNone(self.pending_record().server_uuids)
        self.siblings.assert_not_called()

    @mock.patch.object(nova_servers, 'set_cell_system_metadata')
    def test_personality_create_writes_no_marker(self, set_sysmeta):
        files = [{'path': '/a', 'contents': 'YQ=='},
                 {'path': '/b', 'contents': 'Yg=='}]
        self._send(self._request(body=self._create_body(personality=files)))
        record = self.pending_record()
        self.assertEqual((2, 'accepted'),
                         (record.personality_files, record.status))
        # The server is still a BuildRequest: the personality gate marks
        # it when it refuses a rebuild.
        set_sysmeta.assert_not_called()

    def test_refused_create_keeps_novas_answer_when_the_delete_fails(self):
        self.useFixture(fixtures.MockPatchObject(
            objects.CreateRecord, '_destroy_in_db',
            side_effect=db_exc.DBConnectionError('blip')))
        logs = self.useFixture(fixtures.FakeLogger())
        for status in (400, 403, 409):
            req = self._request(body=self._create_body())
            req.environ['openstack.request_id'] = 'req-%d' % status
            body = {'badRequest': {'code': status, 'message': 'no'}}
            resp, nova = self._send(req, FakeNova(self, status=status,
                                                  body=body))
            self.assertEqual((status, body), (resp.status_int, resp.json))
            self.assertIn('Could not delete the create record of request '
                          'req-%d (Nova answered %d)' % (status, status),
                          logs.output)

    def test_create_without_request_id_passes_unrecorded_and_logged(self):
        logs = self.useFixture(fixtures.FakeLogger())
        req = self._request(body=self._create_body())
        del req.environ['openstack.request_id']
        resp, nova = self._send(req)
        self.assertEqual(202, resp.status_int)
        self.assertEqual([None], [call[3] for call in nova.calls])
        self.assertIn('passes to Nova unrecorded: no openstack.request_id',
                      logs.output)

    def test_completion_failure_keeps_novas_answer(self):
        self.siblings.side_effect = RuntimeError('cell down')
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
