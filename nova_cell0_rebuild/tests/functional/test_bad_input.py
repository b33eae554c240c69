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

"""Bad input gets a Nova-style 4xx and changes nothing, never a 500.

Issue 25, point 4. On the reaper path the body was looked into (``in``)
before Nova's schema had said it is an object: ``{"rebuild": null}`` and
``{"rebuild": 5}`` answered 500. The rebuildability API's ``limit`` took
``'²'`` for a number (``str.isdigit``) and ``int()`` raised. Each answer
here is compared with Nova's own where Nova has one: the same body for a
server in a real cell, which Nova answers itself.
"""

import fixtures as fixtures_lib
from nova.api import wsgi as nova_wsgi
from nova import utils
import webob

from nova_cell0_rebuild import fixture
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_cell0_servers_api
from nova_cell0_rebuild.tests.functional import test_reaper_path

CELL0 = '00000000-0000-0000-0000-000000000000'

#: Rebuild values that are no object: each is Nova's 400, for any server.
NOT_AN_OBJECT = (None, 5, 'x', [], True, 1.5, [{'imageRef': 'x'}])
#: Objects Nova's schema refuses (nothing to inspect in them either).
BAD_OBJECTS = ({}, {'imageRef': None}, {'imageRef': 5},
               {'imageRef': 'x', 'trusted_image_certificates': 'cert'})


class _BadInputTestCase(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        owner = self.api.project_id
        self.reaper = test_reaper_path._reaper_client(self)
        self.member = self._client('fake', owner, ['member', 'reader'])
        self.buried = self._create_buried_server()
        self._start_compute('host1')
        # A server in a real cell: Nova answers for it itself.
        self.landed = self._create_server(networks='none')

    def _post_action(self, api, server_id, rebuild, microversion):
        with utils.temporary_mutation(api, microversion=microversion):
            return api.api_post('/servers/%s/action' % server_id,
                                {'rebuild': rebuild},
                                check_response_status=False)

    def _untouched(self, server_id):
        view = self.admin_api.get_server(server_id)
        return (view['updated'], view['image'], view['status'],
                self._mapped_cell_uuid(server_id))

    def _assert_novas_400(self, api, microversion, rebuild):
        """The buried server's answer is Nova's for the landed one."""
        before = self._untouched(self.buried['id'])
        novas = self._post_action(api, self.landed['id'], rebuild,
                                  microversion)
        self.assertEqual(400, novas.status, (rebuild, novas.body))
        resp = self._post_action(api, self.buried['id'], rebuild,
                                 microversion)
        self.assertEqual((novas.status, novas.body),
                         (resp.status, resp.body), rebuild)
        self.assertEqual(400, resp.body['badRequest']['code'])
        self.assertEqual(novas.headers['openstack-api-version'],
                         resp.headers['openstack-api-version'])
        self.assertEqual(before, self._untouched(self.buried['id']))
        self.assertEqual(CELL0, self._mapped_cell_uuid(self.buried['id']))


class ReaperBadBodyTest(_BadInputTestCase):
    """A reaper's rebuild whose body Nova's schema refuses: Nova's 400."""

    def test_rebuild_that_is_no_object_gets_novas_400(self):
        for rebuild in NOT_AN_OBJECT:
            self._assert_novas_400(self.reaper,
                                   test_reaper_path.REAPER_VERSION, rebuild)

    def test_rebuild_object_nova_refuses_gets_novas_400(self):
        for rebuild in BAD_OBJECTS:
            self._assert_novas_400(self.reaper,
                                   test_reaper_path.REAPER_VERSION, rebuild)


class Cell0PathBadBodyTest(_BadInputTestCase):
    """The same bodies at the threshold, for the server's owner."""

    def test_rebuild_that_is_no_object_gets_novas_400(self):
        for rebuild in NOT_AN_OBJECT + BAD_OBJECTS:
            self._assert_novas_400(self.member, 'latest', rebuild)

    def test_reaper_at_the_threshold_gets_novas_400(self):
        for rebuild in NOT_AN_OBJECT:
            self._assert_novas_400(self.reaper, 'latest', rebuild)


class Cell0ServersBadQueryTest(test_cell0_servers_api._ApiTestCase):
    """Each query parameter of the rebuildability API, checked as Nova's
    query schemas check theirs: a Nova-style 400, nothing written.
    """

    def setUp(self):
        super().setUp()
        self.server = self._create_buried_server()
        self.addCleanup(lambda: self.assertEqual([], self.get_writes))

    def _assert_400(self, resp, parameter, query):
        self.assertEqual(400, resp.status, '%s: %s' % (query, resp.body))
        fault = resp.body['badRequest']
        self.assertEqual(400, fault['code'])
        self.assertIn(parameter, fault['message'])

    def test_limit_that_is_no_ascii_number_is_400(self):
        # str.isdigit() is true for each of the first three.
        for limit in ('\u00b2', '\u0661\u0662', '\uff11', '1.5', '-1',
                      ' 1', '', '9' * 5000):
            resp = self._list(api=self.admin, limit=limit)
            self._assert_400(resp, 'limit', limit)

    def test_parameter_given_twice_is_400(self):
        for name, value in (('limit', '1'), ('marker', self.server['id']),
                            ('all_projects', 'True'),
                            ('project_id', self.api.project_id)):
            resp = self._get('/os-cell0-rebuild/servers?%s=%s&%s=%s'
                             % (name, value, name, value), api=self.admin)
            self._assert_400(resp, name, name)

    def test_project_id_that_is_no_project_id_is_400(self):
        for project_id in ('', 'a b', 'p\u00e9', 'x' * 256):
            resp = self._list(api=self.admin, project_id=project_id)
            self._assert_400(resp, 'project_id', project_id)

    def test_all_projects_that_is_no_boolean_is_400(self):
        for value in ('maybe', '2', 'truee', '\u00b9'):
            resp = self._list(api=self.admin, all_projects=value)
            self._assert_400(resp, 'all_projects', value)

    def test_query_that_is_not_utf8_is_novas_400(self):
        novas = self.member.api_get('/servers?name=%FF',
                                    check_response_status=False)
        self.assertEqual(400, novas.status, novas.body)
        for path in ('/os-cell0-rebuild/servers?marker=%FF',
                     '/os-cell0-rebuild/servers?%FF=1',
                     '/os-cell0-rebuild/servers/%s?limit=%%FF'
                     % self.server['id']):
            resp = self._get(path)
            self.assertEqual((novas.status, novas.body),
                             (resp.status, resp.body), path)

    def test_good_values_still_answer(self):
        for query in ({'limit': '0'}, {'limit': '007'},
                      {'limit': '9' * 30}, {'all_projects': ''},
                      {'all_projects': 'yes'}, {'all_projects': 'FALSE'},
                      {'project_id': self.api.project_id}):
            resp = self._list(api=self.admin, **query)
            self.assertEqual(200, resp.status, '%s: %s' % (query, resp.body))


class UndecodablePathTest(base.Cell0RebuildTestCase):
    """A path that is no UTF-8: Nova's own answer, or ours, never a 500.

    Nova routes the raw path; webob's ``path_info`` raises on it.
    """

    def setUp(self):
        super().setUp()
        without = fixture.write_paste_config_without_filter(
            self.useFixture(fixtures_lib.TempDir()).path)
        self.nova = nova_wsgi.Loader(without).load_app('osapi_compute')
        self.app = nova_wsgi.Loader(
            fixture.find_paste_config()).load_app('osapi_compute')
        self.server = self._create_buried_server()

    def _send(self, app, method, path):
        req = webob.Request.blank('/v2.1' + path, method=method, headers={
            'X-Auth-User': 'fake', 'X-User-Id': 'fake',
            'X-Auth-Project-Id': self.api.project_id,
            'X-Roles': 'reader,member', 'Content-Type': 'application/json',
            'OpenStack-API-Version': 'compute latest'})
        if method == 'POST':
            req.body = b'{"rebuild": {"imageRef": "%s"}}' % (
                self.image_id.encode())
        return req.get_response(app)

    def test_server_paths_get_novas_answer(self):
        for method, path in (
                ('GET', '/servers/%FF'), ('DELETE', '/servers/%FF'),
                ('POST', '/servers/%FF/action'),
                ('POST', '/servers/%s%%FF/action' % self.server['id']),
                ('DELETE', '/servers/%s%%FF' % self.server['id']),
                ('GET', '/servers/%FF/os-instance-actions'),
                ('GET', '/%FF/servers/%FF'),
                ('GET', '/os-cell0-rebuild/serv%FFers')):
            novas = self._send(self.nova, method, path)
            resp = self._send(self.app, method, path)
            self.assertLess(resp.status_int, 500, (method, path, resp.body))
            self.assertEqual((novas.status, novas.body),
                             (resp.status, resp.body), (method, path))
        self.assertEqual(CELL0, self._mapped_cell_uuid(self.server['id']))

    def test_cell0_server_path_is_not_found(self):
        for path in ('/os-cell0-rebuild/servers/%FF',
                     '/os-cell0-rebuild/servers/%s%%FF' % self.server['id'],
                     '/%s/os-cell0-rebuild/servers/%%FF/'
                     % self.api.project_id):
            resp = self._send(self.app, 'GET', path)
            self.assertEqual(404, resp.status_int, (path, resp.body))
            self.assertEqual(404, resp.json['itemNotFound']['code'])
