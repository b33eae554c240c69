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

"""The demo's sandbox: loopback clients only, identity from the headers."""

import testtools
import webob
import webob.dec

from nova_cell0_rebuild.demo import sandbox


class SandboxIdentityTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.seen = {}

        @webob.dec.wsgify
        def app(req):
            self.seen = {k: req.environ.get(k) for k in (
                'HTTP_X_AUTH_USER', 'HTTP_X_AUTH_PROJECT_ID', 'HTTP_X_ROLES')}
            return webob.Response('ok')
        self.app = sandbox.SandboxIdentity(app)

    def _get(self, remote='127.0.0.1', **headers):
        req = webob.Request.blank('/v2.1/servers', headers=headers)
        req.remote_addr = remote
        return req.get_response(self.app)

    def test_keystone_style_headers(self):
        resp = self._get(**{'X-User-Id': 'alice', 'X-Project-Id': 'science',
                            'X-Roles': 'member,reader'})
        self.assertEqual(200, resp.status_int)
        self.assertEqual({'HTTP_X_AUTH_USER': 'alice',
                          'HTTP_X_AUTH_PROJECT_ID': 'science',
                          'HTTP_X_ROLES': 'member,reader'}, self.seen)

    def test_harness_style_headers_win(self):
        self._get(**{'X-Auth-User': 'bob', 'X-Auth-Project-Id': 'p1',
                     'X-User-Id': 'alice', 'X-Project-Id': 'science'})
        self.assertEqual(('bob', 'p1'), (self.seen['HTTP_X_AUTH_USER'],
                                         self.seen['HTTP_X_AUTH_PROJECT_ID']))

    def test_no_headers_is_a_member(self):
        self._get(remote='::1')
        self.assertEqual({'HTTP_X_AUTH_USER': 'sandbox-user',
                          'HTTP_X_AUTH_PROJECT_ID': 'sandbox',
                          'HTTP_X_ROLES': 'member,reader'}, self.seen)

    def test_a_project_alone_is_a_member_of_it(self):
        # The banner's curl example: not the admin, whose user Nova's
        # harness makes is_admin.
        self._get(**{'X-Project-Id': 'science'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'science-user',
                          'HTTP_X_AUTH_PROJECT_ID': 'science',
                          'HTTP_X_ROLES': 'member,reader'}, self.seen)

    def test_admin_when_asked(self):
        self._get(**{'X-Roles': 'admin,member,reader'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'admin',
                          'HTTP_X_AUTH_PROJECT_ID': 'admin',
                          'HTTP_X_ROLES': 'admin,member,reader'}, self.seen)
        self._get(**{'X-Roles': 'reader,admin', 'X-Project-Id': 'science',
                     'X-User-Id': 'alice'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'alice',
                          'HTTP_X_AUTH_PROJECT_ID': 'science',
                          'HTTP_X_ROLES': 'reader,admin'}, self.seen)

    def test_other_clients_are_refused(self):
        resp = self._get(remote='10.0.0.7', **{'X-User-Id': 'alice'})
        self.assertEqual(403, resp.status_int)
        self.assertEqual({}, self.seen)

    def test_a_known_token_is_its_identity(self):
        # What stock clients send once logged in to the identity stand-in.
        self._get(**{'X-Auth-Token': 'reaper'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'admin',
                          'HTTP_X_AUTH_PROJECT_ID': 'service',
                          'HTTP_X_ROLES': 'service,admin,member,reader'},
                         self.seen)
        self._get(**{'X-Auth-Token': 'admin'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'admin',
                          'HTTP_X_AUTH_PROJECT_ID': 'admin',
                          'HTTP_X_ROLES': 'admin,member,reader'}, self.seen)

    def test_headers_win_over_a_token(self):
        self._get(**{'X-Auth-Token': 'reaper', 'X-Roles': 'member,reader',
                     'X-Project-Id': 'science', 'X-User-Id': 'alice'})
        self.assertEqual({'HTTP_X_AUTH_USER': 'alice',
                          'HTTP_X_AUTH_PROJECT_ID': 'science',
                          'HTTP_X_ROLES': 'member,reader'}, self.seen)

    def test_any_other_token_is_a_member(self):
        for token in ('member', 'service', 'Reaper', ''):
            self._get(**{'X-Auth-Token': token})
            self.assertEqual({'HTTP_X_AUTH_USER': 'sandbox-user',
                              'HTTP_X_AUTH_PROJECT_ID': 'sandbox',
                              'HTTP_X_ROLES': 'member,reader'}, self.seen,
                             token)


class StandInsTest(testtools.TestCase):
    """The Keystone and Glance stand-ins, under the sandbox's routes."""

    IMAGE = {'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6', 'name': 'img',
             'status': 'active', 'deleted': False, 'min_ram': 0,
             'properties': {'architecture': 'x86_64'}}

    def setUp(self):
        super().setUp()

        class Glance(object):
            def detail(glance, context):
                return [dict(self.IMAGE)]

        @webob.dec.wsgify
        def nova(req):
            return webob.Response('nova %s' % req.path_info)
        self.app = sandbox.SandboxIdentity(
            sandbox.SandboxRoutes(nova, Glance()))

    def _call(self, path, method='GET', body=None):
        req = webob.Request.blank(path, method=method,
                                  headers={'Host': '127.0.0.1:8774'})
        req.remote_addr = '127.0.0.1'
        if body is not None:
            req.json_body = body
        return req.get_response(self.app)

    def _login(self, **identity):
        return self._call('/identity/v3/auth/tokens', 'POST', {
            'auth': {'identity': identity, 'scope': {
                'project': {'name': 'service',
                            'domain': {'id': 'default'}}}}})

    def test_nova_keeps_its_paths(self):
        self.assertEqual(b'nova /v2.1/servers',
                         self._call('/v2.1/servers').body)
        self.assertEqual(b'nova /identityx', self._call('/identityx').body)

    def test_login_gives_the_users_token_and_the_catalog(self):
        resp = self._login(methods=['password'], password={'user': {
            'name': 'reaper', 'password': 'x',
            'domain': {'id': 'default'}}})
        self.assertEqual(201, resp.status_int, resp.body)
        self.assertEqual('reaper', resp.headers['X-Subject-Token'])
        token = resp.json_body['token']
        self.assertEqual(('service', ['service', 'admin', 'member', 'reader']),
                         (token['project']['id'],
                          [role['name'] for role in token['roles']]))
        self.assertEqual(
            {'compute': 'http://127.0.0.1:8774/v2.1',
             'image': 'http://127.0.0.1:8774/image',
             'identity': 'http://127.0.0.1:8774/identity/v3'},
            {service['type']: service['endpoints'][0]['url']
             for service in token['catalog']})
        self.assertEqual('v3.14', self._call('/identity/v3').json_body[
            'version']['id'])

    def test_other_users_and_tokens_are_members(self):
        for identity in ({'methods': ['password'], 'password': {'user': {
                'name': 'alice', 'password': 'x'}}},
                {'methods': ['token'], 'token': {'id': 'service'}}):
            resp = self._login(**identity)
            self.assertEqual('member', resp.headers['X-Subject-Token'])
            self.assertEqual('sandbox',
                             resp.json_body['token']['project']['id'])
        resp = self._login(methods=['token'], token={'id': 'admin'})
        self.assertEqual('admin', resp.headers['X-Subject-Token'])

    def test_images_are_read_only(self):
        image_id = self.IMAGE['id']
        image = self._call('/image/v2/images/%s' % image_id).json_body
        self.assertEqual((image_id, 'img', 'x86_64'),
                         (image['id'], image['name'], image['architecture']))
        self.assertNotIn('properties', image)
        for query, found in (('', [image_id]), ('?name=img', [image_id]),
                             ('?name=other', []),
                             ('?id=in:x,%s' % image_id, [image_id]),
                             ('?marker=%s' % image_id, [])):
            listed = self._call('/image/v2/images' + query).json_body
            self.assertEqual(found, [i['id'] for i in listed['images']],
                             query)
        self.assertEqual(404, self._call('/image/v2/images/nope').status_int)
        self.assertEqual(405, self._call('/image/v2/images', 'POST',
                                         {}).status_int)
