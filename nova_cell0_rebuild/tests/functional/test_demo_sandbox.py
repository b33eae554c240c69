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
