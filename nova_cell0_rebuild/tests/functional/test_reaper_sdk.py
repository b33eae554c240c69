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

"""The openstacksdk calls admin/reaper-integration.rst documents.

A stock openstacksdk (capped at 2.100, below Nova 34's maximum) as a reaper
with the service role: ask the rebuildability API, rebuild at 2.65, and a
retry after the server landed is a ConflictException, not a re-image.
"""

import fixtures
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
import openstack
from openstack import exceptions as sdk_exceptions

from nova_cell0_rebuild.tests.functional import base


class ReaperWithOpenstackSdkTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        # Nova's harness reads the caller from these headers (no Keystone).
        session = ks_session.Session(
            auth=noauth.NoAuth(), additional_headers={
                'X-Auth-User': 'admin', 'X-User-Id': 'admin',
                'X-Auth-Project-Id': 'service',
                'X-Roles': 'service,admin,member,reader'})
        self.conn = openstack.connection.Connection(
            session=session, compute_api_version='2.65',
            compute_endpoint_override=self.api.base_url.rsplit('/', 1)[0] +
            '/v2.1')

    def test_ask_then_rebuild_then_retry(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        resp = self.conn.compute.get(
            '/os-cell0-rebuild/servers?all_projects=True')
        resp.raise_for_status()
        listed = resp.json()['cell0_servers']
        self.assertEqual([(server['id'], True)],
                         [(s['id'], s['rebuildable']) for s in listed])

        sent = []
        real_request = ks_session.Session.request

        def recording(session, url, method, **kwargs):
            resp = real_request(session, url, method, **kwargs)
            sent.append((method, resp.request.headers.get(
                'OpenStack-API-Version')))
            return resp
        self.useFixture(fixtures.MonkeyPatch(
            'keystoneauth1.session.Session.request', recording))
        rebuilt = self.conn.compute.rebuild_server(server['id'],
                                                   self.image_id)
        self.assertEqual((server['id'], 'BUILD'),
                         (rebuilt.id, rebuilt.status))
        self.assertEqual([('POST', 'compute 2.65')], sent)
        self._wait_for_state_change(server, 'ACTIVE')

        error = self.assertRaises(
            sdk_exceptions.ConflictException,
            self.conn.compute.rebuild_server, server['id'], self.image_id)
        self.assertIn('is not in cell0', str(error))
