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

"""The rebuildability API, ``GET /os-cell0-rebuild/servers[/{id}]``.

Real Nova with its new policy defaults, as test_policy_matrix. Each
verdict must be what a rebuild by the same caller answers now.
"""

import os
import re
import sys
from urllib import parse

from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import sqlalchemy as sa
from testtools import content

from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_request_cost
from nova_cell0_rebuild.tests import statements as sql_counting

SAMPLES = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
    os.pardir, 'api-ref', 'source', 'samples'))
OTHER_PROJECT = 'other-project'
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
_FIELDS = {'id', 'name', 'project_id', 'user_id', 'rebuildable',
           'refused_by', 'reason', 'buried_at', 'rebuild_attempts',
           'interrupted_move', 'wait'}
_WRITES = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')


def _masked(body):
    return _UUID.sub('UUID', str(body))


def _shape(value):
    """The keys and value types of an answer, as its sample shows them."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if value is None:
        return 'null-or-string'
    if isinstance(value, str):
        return 'null-or-string'
    return type(value).__name__


def _sample(name):
    with open(os.path.join(SAMPLES, name + '.json')) as sample:
        return jsonutils.loads(sample.read())


class _ApiTestCase(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        owner = self.api.project_id
        self.member = self._client('fake', owner, ['member', 'reader'])
        self.reader = self._client('reader', owner, ['reader'])
        self.nobody = self._client('nobody', owner, ['other'])
        self.admin = self._client('admin', owner,
                                  ['admin', 'member', 'reader'])
        self.other = self._client('other', OTHER_PROJECT,
                                  ['member', 'reader'])
        self.statements = []
        self.get_writes = []

        def record(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith(
                    test_request_cost._TRANSACTION):
                return  # SQLite's explicit BEGIN: a marker, no query
            if sql_counting.is_connection_ping(statement):
                return
            if test_request_cost._issuer(sys._getframe(1)) == 'filter':
                self.statements.append(statement)
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', record)

    def _get(self, path, api=None, prefixed=False):
        api = api or self.member
        if prefixed:
            path = '/%s%s' % (api.project_id, path)
        before = len(self.statements)
        resp = api.api_get(path, check_response_status=False)
        self.get_writes.extend(
            s for s in self.statements[before:]
            if s.lstrip().upper().startswith(_WRITES))
        return resp

    def _list(self, api=None, **query):
        path = '/os-cell0-rebuild/servers'
        if query:
            path += '?' + parse.urlencode(query)
        return self._get(path, api=api)

    def _show(self, server_id, api=None):
        return self._get('/os-cell0-rebuild/servers/%s' % server_id, api=api)


class Cell0ServersApiTest(_ApiTestCase):

    def _buried(self):
        ok = self._create_buried_server(name='ok')
        with_files = self._create_buried_server(
            name='files', microversion='2.1',
            networks=[{'uuid': self.neutron.network_1['id']}],
            personality=[{'path': '/etc/motd', 'contents': 'aGVsbG8='}])
        other = self._create_buried_server(name='other', api=self.other)
        return ok, with_files, other

    def test_list_and_show_give_each_servers_verdict(self):
        ok, with_files, other = self._buried()
        self.addCleanup(lambda: self.assertEqual([], self.get_writes))
        for prefixed in (False, True):
            resp = self._get('/os-cell0-rebuild/servers', prefixed=prefixed)
            self.assertEqual(200, resp.status, resp.body)
            listed = {s['id']: s for s in resp.body['cell0_servers']}
            # The caller's project only, no next page.
            self.assertEqual({ok['id'], with_files['id']}, set(listed))
            self.assertNotIn('cell0_servers_links', resp.body)
        for server in listed.values():
            self.assertEqual(_FIELDS, set(server))
            self.assertEqual(self.api.project_id, server['project_id'])
            self.assertEqual('fake', server['user_id'])
            self.assertEqual(0, server['rebuild_attempts'])
            self.assertFalse(server['interrupted_move'])
            self.assertRegex(server['buried_at'],
                             r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$')
        self.assertEqual((True, None, None, 'ok'), (
            listed[ok['id']]['rebuildable'], listed[ok['id']]['refused_by'],
            listed[ok['id']]['reason'], listed[ok['id']]['name']))
        refused = listed[with_files['id']]
        self.assertEqual((False, 'personality'),
                         (refused['rebuildable'], refused['refused_by']))
        self.assertIn('created with personality files', refused['reason'])
        # Judged, not marked: the marker is the rebuild's one write.
        self.assertNotIn('created_with_personality_files',
                         self._cell0_instance(
                             with_files['id']).system_metadata)
        # The api-ref samples have the answers' shape.
        page = self._list(api=self.admin, all_projects='True', limit=2)
        self.assertEqual(_shape(_sample('cell0-servers-list-resp')),
                         _shape(page.body))
        # One server: the same entry, with and without the project prefix.
        for prefixed in (False, True):
            resp = self._get('/os-cell0-rebuild/servers/%s'
                             % with_files['id'], prefixed=prefixed)
            self.assertEqual(200, resp.status, resp.body)
            self.assertEqual(refused, resp.body['cell0_server'])
        self.assertEqual(_shape(_sample('cell0-server-show-resp')),
                         _shape(resp.body))
        # A reader sees them too; a role Nova does not know, nothing.
        self.assertEqual(200, self._list(api=self.reader).status)
        self.assertEqual(200, self._show(ok['id'], api=self.reader).status)
        for resp in (self._list(api=self.nobody),
                     self._show(ok['id'], api=self.nobody)):
            self.assertEqual(403, resp.status, resp.body)
            self.assertIn('cell0_rebuild:cell0_servers:',
                          resp.body['forbidden']['message'])

    def test_verdict_is_what_a_rebuild_answers(self):
        ok, with_files, _other = self._buried()
        locked = self._create_buried_server(name='locked')
        self.api.post_server_action(locked['id'], {'lock': {}})
        self._start_compute('host1')

        verdict = self._show(with_files['id']).body['cell0_server']
        resp = self._rebuild(with_files['id'], api=self.member)
        self.assertEqual(409, resp.status, resp.body)
        self.assertEqual(verdict['reason'],
                         resp.body['conflictingRequest']['message'])

        # The lock refuses a member, not an admin, as the rebuild does.
        verdict = self._show(locked['id']).body['cell0_server']
        self.assertEqual(('lock', 'Instance %s is locked' % locked['id']),
                         (verdict['refused_by'], verdict['reason']))
        resp = self._rebuild(locked['id'], api=self.member)
        self.assertEqual(verdict['reason'],
                         resp.body['conflictingRequest']['message'])
        self.assertTrue(self._show(locked['id'], api=self.admin).body[
            'cell0_server']['rebuildable'])

        self.assertTrue(self._show(ok['id']).body['cell0_server'][
            'rebuildable'])
        resp = self._rebuild(ok['id'], api=self.member)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(ok, 'ACTIVE')
        # Rebuilt: not buried any more, the same 404 as an unknown server.
        self._assert_not_found(ok['id'])
        self.assertNotIn(ok['id'], [s['id'] for s in self._list().body[
            'cell0_servers']])
        # The GETs wrote nothing.
        self.assertEqual([], self.get_writes)

    def test_a_rebuild_that_fails_again_counts_its_attempts(self):
        server = self._create_buried_server()
        before = self._show(server['id']).body['cell0_server']
        resp = self._rebuild(server['id'], api=self.member)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ERROR')
        after = self._show(server['id']).body['cell0_server']
        self.assertEqual((0, 1), (before['rebuild_attempts'],
                                  after['rebuild_attempts']))
        self.assertGreaterEqual(after['buried_at'], before['buried_at'])
        self.assertTrue(after['rebuildable'])

    def _assert_not_found(self, server_id, api=None):
        resp = self._show(server_id, api=api)
        self.assertEqual(404, resp.status, resp.body)
        self.assertEqual(404, resp.body['itemNotFound']['code'])
        unknown = self._show(uuidutils.generate_uuid(), api=api)
        self.assertEqual(_masked(unknown.body), _masked(resp.body))

    def test_other_projects_servers_are_not_found(self):
        _ok, _with_files, other = self._buried()
        self._assert_not_found(other['id'])
        self._assert_not_found(other['id'], api=self.nobody)
        resp = self._show('not-a-uuid')
        self.assertEqual(404, resp.status, resp.body)
        # An admin sees it, and lists it with all_projects or project_id.
        self.assertEqual(200, self._show(other['id'], api=self.admin).status)
        everyone = self._list(api=self.admin, all_projects='True')
        self.assertEqual(3, len(everyone.body['cell0_servers']))
        theirs = self._list(api=self.admin, project_id=OTHER_PROJECT)
        self.assertEqual([other['id']], [
            s['id'] for s in theirs.body['cell0_servers']])
        own = self._list(api=self.admin)
        self.assertEqual(2, len(own.body['cell0_servers']))
        # Others are refused the whole cloud and another project.
        for query in ({'all_projects': 'True'},
                      {'project_id': OTHER_PROJECT}):
            resp = self._list(**query)
            self.assertEqual(403, resp.status, resp.body)
            self.assertIn('cell0_rebuild:cell0_servers:list:all_projects',
                          resp.body['forbidden']['message'])
        # Its own project id is no other project.
        self.assertEqual(200, self._list(
            project_id=self.api.project_id).status)
        # A URL naming another project: Nova's 400.
        resp = self.member.api_get(
            '/%s/os-cell0-rebuild/servers' % uuidutils.generate_uuid(
                dashed=False), check_response_status=False)
        self.assertEqual(400, resp.status, resp.body)

    def test_pages_follow_the_next_link(self):
        ok, with_files, other = self._buried()
        seen = []
        resp = self._list(api=self.admin, all_projects='True', limit=1)
        while True:
            self.assertEqual(200, resp.status, resp.body)
            seen.extend(s['id'] for s in resp.body['cell0_servers'])
            links = resp.body.get('cell0_servers_links')
            if not links:
                break
            self.assertEqual('next', links[0]['rel'])
            query = dict(parse.parse_qsl(parse.urlsplit(
                links[0]['href']).query))
            self.assertEqual({'all_projects', 'limit', 'marker'},
                             set(query))
            resp = self._list(api=self.admin, **query)
        # The last full page has a link to an empty one.
        self.assertEqual(sorted([ok['id'], with_files['id'], other['id']]),
                         sorted(seen))
        self.assertEqual([], self._list(api=self.admin, limit=0).body[
            'cell0_servers'])

    def test_bad_query_parameters_are_400(self):
        server = self._create_buried_server()
        for query in ({'limit': '-1'}, {'limit': 'x'},
                      {'marker': uuidutils.generate_uuid()},
                      {'marker': 'not-a-uuid'},
                      {'all_projects': 'maybe'}, {'sort_key': 'name'}):
            resp = self._list(**query)
            self.assertEqual(400, resp.status, '%s: %s' % (query, resp.body))
            self.assertEqual(400, resp.body['badRequest']['code'])
        resp = self._get('/os-cell0-rebuild/servers/%s?verbose=1'
                         % server['id'])
        self.assertEqual(400, resp.status, resp.body)
        self.assertIn('verbose', resp.body['badRequest']['message'])


class Cell0ServersListScalesTest(_ApiTestCase):
    """The listing's statements do not grow with cell0, nor write."""

    def _statements_for_a_page(self):
        before = len(self.statements)
        resp = self._list(api=self.admin, all_projects='True', limit=10)
        self.assertEqual(200, resp.status, resp.body)
        self.assertEqual(10, len(resp.body['cell0_servers']))
        self.assertTrue(all(s['rebuildable'] is False and
                            s['refused_by'] == 'record'
                            for s in resp.body['cell0_servers']))
        return self.statements[before:]

    def test_statements_flat_as_cell0_grows(self):
        self._bury_directly(10)
        small = self._statements_for_a_page()
        self._bury_directly(990)
        large = self._statements_for_a_page()
        self.addDetail('statements', content.text_content(
            'SQL statements for GET /os-cell0-rebuild/servers?limit=10: %d '
            'with 10 servers in cell0, %d with 1000' % (len(small),
                                                        len(large))))
        self.assertEqual(len(small), len(large))
        # Fixed reads (cell0, instances, their system_metadata, faults,
        # mappings, create records, journals, waits) and the quota gate's
        # reads for each server of the page: none for the cell0 around it.
        quota = [s for s in large if 'quota' in s.split('FROM')[1][:40]]
        self.assertEqual(8, len(large) - len(quota), large)
        self.assertEqual([], self.get_writes)
