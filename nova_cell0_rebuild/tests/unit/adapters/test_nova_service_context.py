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

"""The service user's context: keystoneauth's real loading and auth.

Keystone and Glance are answered by requests_mock; everything between the
configuration file and the HTTP request is keystoneauth's and Nova's own.
"""

import os

import fixtures
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import fixture as ks_fixture
from nova import context as nova_context
from nova.image import glance
from nova import service_auth
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base
import requests
from requests_mock.contrib import fixture as requests_fixture

from nova_cell0_rebuild.adapters import nova_service_context
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild import exception

AUTH_URL = 'http://keystone.example.test/identity/v3'
GLANCE_URL = 'http://glance.example.test'
TOKEN_ID = 'a-token-of-the-service-user'

CLIENT_SECTION = """
[cell0_rebuild_client]
auth_type = password
auth_url = %s
username = cell0-rebuild
password = secret
project_name = service
user_domain_name = Default
project_domain_name = Default
""" % AUTH_URL

SERVICE_USER_SECTION = CLIENT_SECTION.replace(
    'cell0_rebuild_client', 'service_user').replace('cell0-rebuild', 'nova')


class Keystone(fixtures.Fixture):
    """Keystone v3 and Glance's version document behind requests_mock."""

    def _setUp(self):
        self.mock = self.useFixture(requests_fixture.Fixture())
        self.mock.get(AUTH_URL, json=ks_fixture.V3Discovery(AUTH_URL))
        self.mock.get(GLANCE_URL, json={'versions': [{
            'id': 'v2.16', 'status': 'CURRENT',
            'links': [{'rel': 'self', 'href': GLANCE_URL + '/v2/'}]}]})
        self.token = ks_fixture.V3Token(
            user_id='u-service', user_name='nova', user_domain_id='default',
            project_id='p-service', project_name='service',
            project_domain_id='default')
        self.token.add_role(name='admin')
        self.token.add_role(name='service')
        self.token.add_service('image', name='glance').add_standard_endpoints(
            public=GLANCE_URL, internal=GLANCE_URL, region='RegionOne')
        self.token.add_service('identity').add_standard_endpoints(
            public=AUTH_URL, region='RegionOne')
        self.mock.post(AUTH_URL + '/auth/tokens', status_code=201,
                       json=self.token, headers={'X-Subject-Token': TOKEN_ID})

    def refuse(self):
        self.mock.post(AUTH_URL + '/auth/tokens', status_code=401, json={
            'error': {'code': 401, 'title': 'Unauthorized',
                      'message': 'The request you have made requires '
                                 'authentication.'}})

    @property
    def user_name_sent(self):
        body = self.mock.request_history[-1].json()
        return body['auth']['identity']['password']['user']['name']


class TestServiceContext(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.keystone = self.useFixture(Keystone())
        # Nova's clients read its global CONF and cache sessions.
        self.useFixture(config_fixture.Config(cfg.CONF))
        service_auth.reset_globals()
        self.addCleanup(service_auth.reset_globals)

    def _conf(self, text):
        """A private ConfigOpts that read *text* as its nova.conf."""
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as conf_file:
            conf_file.write(text)
        conf = cfg.ConfigOpts()
        plugin_conf.register_opts(conf)
        conf(['--config-file', path], project='nova',
             default_config_files=[], default_config_dirs=[])
        self.addCleanup(conf.reset)
        return conf

    def test_context_carries_the_service_users_token(self):
        context = nova_service_context.service_context(
            self._conf(CLIENT_SECTION))
        self.assertEqual('cell0-rebuild', self.keystone.user_name_sent)
        self.assertIsInstance(context, nova_context.RequestContext)
        self.assertEqual(TOKEN_ID, context.auth_token)
        self.assertEqual(('u-service', 'p-service', 'nova', 'service'),
                         (context.user_id, context.project_id,
                          context.user_name, context.project_name))
        self.assertEqual({'admin', 'service'}, set(context.roles))
        self.assertTrue(context.is_admin)
        # Nova keeps the services it talks to, in keystonemiddleware's form.
        self.assertEqual([{'type': 'image', 'name': 'glance', 'endpoints': [
            {'region': 'RegionOne', 'publicURL': GLANCE_URL,
             'internalURL': GLANCE_URL}]}], context.service_catalog)

    def test_novas_glance_client_finds_glance_with_it(self):
        context = nova_service_context.service_context(
            self._conf(CLIENT_SECTION))
        plugin = context.get_auth_plugin()
        self.assertIs(context.user_auth_plugin, plugin)
        self.assertEqual(TOKEN_ID, plugin.get_token(None))
        # What Nova's Glance client does before each call (Nova 31 and
        # newer add a trailing slash).
        self.assertEqual(GLANCE_URL,
                         next(glance.get_api_servers(context)).rstrip('/'))

    def test_an_admin_context_cannot_find_glance(self):
        # Why the command needs the service user's context.
        self.assertRaisesRegex(
            ks_exceptions.EmptyCatalog, 'The service catalog is empty',
            glance.get_api_servers, nova_context.get_admin_context())

    def test_conductor_and_computes_get_the_token_and_catalog(self):
        context = nova_service_context.service_context(
            self._conf(CLIENT_SECTION))
        # As the cast to the conductor serializes it.
        sent = nova_context.RequestContext.from_dict(context.to_dict())
        plugin = sent.get_auth_plugin()
        self.assertEqual(TOKEN_ID, plugin.get_token(None))
        self.assertEqual(GLANCE_URL, plugin.get_endpoint(
            None, service_type='image', interface='internal'))

    def test_falls_back_to_novas_service_user(self):
        context = nova_service_context.service_context(
            self._conf(SERVICE_USER_SECTION))
        self.assertEqual('nova', self.keystone.user_name_sent)
        self.assertEqual(TOKEN_ID, context.auth_token)

    def test_own_section_wins_over_service_user(self):
        nova_service_context.service_context(
            self._conf(SERVICE_USER_SECTION + CLIENT_SECTION))
        self.assertEqual('cell0-rebuild', self.keystone.user_name_sent)

    def test_neither_section_configured(self):
        exc = self.assertRaises(
            exception.ServiceCredentialsMissing,
            nova_service_context.service_context,
            self._conf('[service_user]\nsend_service_user_token = false\n'))
        self.assertIn('[cell0_rebuild_client]', str(exc))
        self.assertIn('[service_user]', str(exc))
        self.assertFalse(self.keystone.mock.called)

    def test_keystone_refuses(self):
        self.keystone.refuse()
        exc = self.assertRaises(
            exception.ServiceAuthenticationFailed,
            nova_service_context.service_context,
            self._conf(SERVICE_USER_SECTION))
        message = str(exc)
        self.assertIn('[service_user]', message)
        self.assertIn(AUTH_URL, message)
        self.assertIn('HTTP 401', message)
        self.assertEqual(1, len(message.splitlines()))

    def test_keystone_unreachable(self):
        self.keystone.mock.post(AUTH_URL + '/auth/tokens',
                                exc=requests.exceptions.ConnectionError)
        exc = self.assertRaises(
            exception.ServiceAuthenticationFailed,
            nova_service_context.service_context,
            self._conf(CLIENT_SECTION))
        self.assertIn('[cell0_rebuild_client]', str(exc))
        self.assertIn(AUTH_URL, str(exc))

    def test_incomplete_credentials_name_the_section(self):
        exc = self.assertRaises(
            exception.ServiceCredentialsInvalid,
            nova_service_context.service_context,
            self._conf('[cell0_rebuild_client]\nauth_type = password\n'))
        self.assertIn('[cell0_rebuild_client]', str(exc))
        self.assertIn('auth_url', str(exc))
        self.assertFalse(self.keystone.mock.called)

    def test_unscoped_token_is_refused(self):
        self.keystone.mock.post(
            AUTH_URL + '/auth/tokens', status_code=201,
            json=ks_fixture.V3Token(user_id='u-service', user_name='nova',
                                    user_domain_id='default'),
            headers={'X-Subject-Token': TOKEN_ID})
        exc = self.assertRaises(
            exception.ServiceCredentialsInvalid,
            nova_service_context.service_context,
            self._conf(CLIENT_SECTION.replace('project_name = service\n',
                                              '')))
        self.assertIn('not scoped to a project', str(exc))
