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

"""Opting a buried server in and out of waiting for room, and what the
rebuildability API shows of it (issue 27, spec ``pending``).

Real Nova with its new policy defaults, as test_cell0_servers_api.
"""

import datetime

from oslo_utils import timeutils
from oslo_utils import uuidutils

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.functional import test_cell0_servers_api

_ISOTIME = '%Y-%m-%dT%H:%M:%SZ'
_WAIT_FIELDS = {'waiting', 'deadline', 'attempts', 'next_attempt',
                'reason_code', 'last_reason'}


def _time(text):
    return datetime.datetime.strptime(text, _ISOTIME)


class _WaitTestCase(test_cell0_servers_api._ApiTestCase):

    enabled = True

    def setUp(self):
        super().setUp()
        if self.enabled:
            self.flags(enabled=True, group='cell0_rebuild_pending')

    def _path(self, server_id):
        return '/os-cell0-rebuild/servers/%s/wait' % server_id

    def _put(self, server_id, deadline='6h', api=None, body=None):
        api = api or self.member
        body = body if body is not None else {'wait': {'deadline': deadline}}
        return api.api_put(self._path(server_id), body,
                           check_response_status=False)

    def _cancel(self, server_id, api=None):
        api = api or self.member
        return api.api_delete(self._path(server_id),
                              check_response_status=False)

    def _wait(self, server_id, api=None):
        resp = self._show(server_id, api=api)
        self.assertEqual(200, resp.status, resp.body)
        return resp.body['cell0_server']['wait']

    def _row(self, server_id):
        return objects.Cell0Wait.get_by_instance_uuid(self.admin_context,
                                                      server_id)

    def _assert_refused(self, resp, status, words=None):
        self.assertEqual(status, resp.status, resp.body)
        fault = list(resp.body.values())[0]
        self.assertEqual(status, fault['code'])
        if words:
            self.assertIn(words, fault['message'])


class WaitsDisabledTest(_WaitTestCase):
    """The default: nothing waits, and the API says so."""

    enabled = False

    def test_wait_member_says_waits_are_disabled(self):
        server = self._create_buried_server()
        wait = self._wait(server['id'])
        self.assertEqual(_WAIT_FIELDS, set(wait))
        self.assertFalse(wait['waiting'])
        self.assertEqual('disabled', wait['reason_code'])

    def test_put_is_409_and_writes_nothing(self):
        server = self._create_buried_server()
        resp = self._put(server['id'])
        self._assert_refused(resp, 409, 'not enabled in this cloud')
        self.assertIsNone(self._row(server['id']))


class WaitsApiTest(_WaitTestCase):

    def test_put_starts_a_wait_shown_by_show_and_list(self):
        server = self._create_buried_server()
        before = timeutils.utcnow().replace(microsecond=0)
        resp = self._put(server['id'], '6h')
        self.assertEqual(200, resp.status, resp.body)
        wait = resp.body['cell0_server']['wait']
        self.assertTrue(wait['waiting'])
        self.assertEqual(0, wait['attempts'])
        self.assertIsNone(wait['next_attempt'])
        self.assertIsNone(wait['reason_code'])
        deadline = _time(wait['deadline'])
        six_hours = datetime.timedelta(hours=6)
        self.assertLessEqual(before + six_hours, deadline)
        self.assertLessEqual(deadline, timeutils.utcnow() + six_hours)
        self.assertEqual(wait, self._wait(server['id']))
        listed = self._list().body['cell0_servers']
        self.assertEqual([wait], [s['wait'] for s in listed])
        row = self._row(server['id'])
        self.assertEqual(('waiting', 'api', 'fake', self.api.project_id),
                         (row.state, row.source, row.user_id,
                          row.project_id))
        # Its place in the order is its burial's, not the request's.
        self.assertEqual(_time(resp.body['cell0_server']['buried_at']),
                         row.queued_at.replace(tzinfo=None))

    def test_put_again_moves_the_deadline_of_the_one_wait(self):
        server = self._create_buried_server()
        self.assertEqual(200, self._put(server['id'], '6h').status)
        first = self._row(server['id'])
        resp = self._put(server['id'], '2026-01-01T00:00:00Z')
        self._assert_refused(resp, 400, 'has passed')
        resp = self._put(server['id'], '1h')
        self.assertEqual(200, resp.status, resp.body)
        second = self._row(server['id'])
        self.assertEqual(first.id, second.id)
        self.assertLess(second.deadline, first.deadline)
        self.assertEqual(first.queued_at, second.queued_at)

    def test_a_deadline_past_the_longest_wait_is_clamped(self):
        self.flags(max_wait_seconds=3600, group='cell0_rebuild_pending')
        server = self._create_buried_server()
        resp = self._put(server['id'], '2d')
        self.assertEqual(200, resp.status, resp.body)
        wait = resp.body['cell0_server']['wait']
        self.assertEqual('clamped', wait['reason_code'])
        self.assertIn('max_wait_seconds', wait['last_reason'])
        buried_at = _time(resp.body['cell0_server']['buried_at'])
        self.assertEqual(buried_at + datetime.timedelta(hours=1),
                         _time(wait['deadline']))

    def test_delete_ends_the_wait_and_put_starts_it_again(self):
        server = self._create_buried_server()
        self.assertEqual(200, self._put(server['id']).status)
        resp = self._cancel(server['id'])
        self.assertEqual(204, resp.status, resp.body)
        wait = self._wait(server['id'])
        self.assertFalse(wait['waiting'])
        self.assertEqual('cancelled', wait['reason_code'])
        # Idempotent.
        self.assertEqual(204, self._cancel(server['id']).status)
        resp = self._put(server['id'], '1h')
        self.assertEqual(200, resp.status, resp.body)
        self.assertTrue(resp.body['cell0_server']['wait']['waiting'])

    def test_delete_of_a_server_never_opted_in_blocks_its_metadata(self):
        server = self._create_buried_server(
            metadata={'cell0_rebuild:wait': '1h'})
        self.assertTrue(self._wait(server['id'])['waiting'])
        self.assertEqual(204, self._cancel(server['id']).status)
        wait = self._wait(server['id'])
        self.assertFalse(wait['waiting'])
        self.assertEqual('cancelled', wait['reason_code'])
        self.assertEqual('ended', self._row(server['id']).state)

    def test_bad_bodies_are_400_and_write_nothing(self):
        server = self._create_buried_server()
        for body, words in (
                ({'wait': {'deadline': 'soon'}}, 'soon'),
                ({'wait': {'deadline': '0h'}}, None),
                ({'wait': {'deadline': 6}}, None),
                ({'wait': {}}, None),
                ({'wait': {'deadline': '1h', 'extra': 1}}, None),
                ({'deadline': '1h'}, None),
                ({'wait': {'deadline': '1h'}, 'x': 1}, None)):
            resp = self._put(server['id'], body=body)
            self._assert_refused(resp, 400, words)
        resp = self.member.api_request(
            self._path(server['id']), method='PUT', body='{not json',
            headers={'Content-Type': 'application/json'})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('Malformed request body', resp.text)
        self.assertIsNone(self._row(server['id']))

    def test_a_bad_body_is_400_before_the_server_is_looked_up(self):
        # As Nova's schema decorator answers before its handler runs.
        resp = self._put(uuidutils.generate_uuid(), body={'wait': {}})
        self._assert_refused(resp, 400)

    def test_who_may_wait(self):
        server = self._create_buried_server()
        self._assert_refused(self._put(server['id'], api=self.reader), 403)
        self._assert_refused(self._cancel(server['id'], api=self.reader),
                             403)
        self._assert_refused(self._put(server['id'], api=self.other), 404)
        self._assert_refused(self._cancel(server['id'], api=self.other),
                             404)
        unknown = uuidutils.generate_uuid()
        self._assert_refused(self._put(unknown), 404)
        self._assert_refused(self._put('not-a-uuid'), 404)
        self.assertIsNone(self._row(server['id']))
        resp = self._put(server['id'], api=self.admin)
        self.assertEqual(200, resp.status, resp.body)

    def test_project_not_enabled_is_409(self):
        self.flags(projects=['someone-else'], group='cell0_rebuild_pending')
        server = self._create_buried_server()
        self._assert_refused(self._put(server['id']), 409,
                             'not enabled for project')
        wait = self._wait(server['id'])
        self.assertEqual('project_not_enabled', wait['reason_code'])
        self.assertIsNone(self._row(server['id']))

    def test_other_methods_are_405(self):
        server = self._create_buried_server()
        resp = self.member.api_get(self._path(server['id']),
                                   check_response_status=False)
        self.assertEqual(405, resp.status)
        resp = self.member.api_post(self._path(server['id']), {'x': 1},
                                    check_response_status=False)
        self.assertEqual(405, resp.status)

    def test_project_prefixed_path(self):
        server = self._create_buried_server()
        path = '/%s%s' % (self.member.project_id, self._path(server['id']))
        resp = self.member.api_put(path, {'wait': {'deadline': '1h'}},
                                   check_response_status=False)
        self.assertEqual(200, resp.status, resp.body)


class OptInAtCreateTest(_WaitTestCase):
    """The metadata key: read by the filter, never changing Nova's answer."""

    def _created(self, value):
        body = self._build_server(image_uuid=self.image_id, networks='none')
        body['metadata'] = {'cell0_rebuild:wait': value}
        resp = self.member.api_post('/servers', {'server': body},
                                    check_response_status=False)
        self.assertEqual(202, resp.status, resp.body)
        return self._wait_for_state_change(resp.body['server'], 'ERROR')

    def test_metadata_opts_in_with_its_deadline_from_the_burial(self):
        server = self._created('90m')
        entry = self._show(server['id']).body['cell0_server']
        wait = entry['wait']
        self.assertTrue(wait['waiting'])
        self.assertEqual(_time(entry['buried_at']) +
                         datetime.timedelta(minutes=90),
                         _time(wait['deadline']))
        # Nova keeps and shows the key as any metadata.
        self.assertEqual({'cell0_rebuild:wait': '90m'},
                         self.api.get_server(server['id'])['metadata'])

    def test_a_malformed_value_changes_nothing_and_is_explained(self):
        server = self._created('soon')
        wait = self._wait(server['id'])
        self.assertFalse(wait['waiting'])
        self.assertEqual('malformed', wait['reason_code'])
        self.assertIn('soon', wait['last_reason'])

    def test_waits_disabled_at_create_is_recorded_as_such(self):
        self.flags(enabled=False, group='cell0_rebuild_pending')
        server = self._created('1h')
        self.flags(enabled=True, group='cell0_rebuild_pending')
        wait = self._wait(server['id'])
        self.assertFalse(wait['waiting'])
        self.assertEqual('disabled', wait['reason_code'])
        self.assertIn('when the server was created; opt in with PUT',
                      wait['last_reason'])
        # As it says: PUT opts it in.
        self.assertEqual(200, self._put(server['id']).status)
        self.assertTrue(self._wait(server['id'])['waiting'])

    def test_a_value_no_database_stores_never_fails_the_create(self):
        # The create record is written before Nova acts: a lone surrogate
        # or a NUL in the user's value must not make it (and the create)
        # fail, whether waits are enabled or not. (What Nova then does
        # with such metadata is Nova's: with SQLite its conductor cannot
        # bury the surrogate's server.)
        for enabled in (False, True):
            self.flags(enabled=enabled, group='cell0_rebuild_pending')
            for value in ('6h\ud800', '6h\x00'):
                body = self._build_server(image_uuid=self.image_id,
                                          networks='none')
                body['metadata'] = {'cell0_rebuild:wait': value}
                resp = self.member.api_post('/servers', {'server': body},
                                            check_response_status=False)
                self.assertEqual(202, resp.status, resp.body)
                record = record_keeping.record_of_server(
                    self.admin_context, resp.body['server']['id'])
                self.assertIsNone(record.wait_deadline)
                self.assertEqual('malformed' if enabled else 'disabled',
                                 record.wait_refusal.split(':')[0])

    def test_a_refused_policy_leaves_the_create_to_nova(self):
        # Our rules registered and loaded, as a request of ours does,
        # before one is overridden.
        nova_api._enforcer().load_rules()
        self.policy.set_rules({'cell0_rebuild:cell0_servers:wait': '!'},
                              overwrite=False)
        server = self._created('1h')
        wait = self._wait(server['id'])
        self.assertFalse(wait['waiting'])
        self.assertEqual('policy', wait['reason_code'])
