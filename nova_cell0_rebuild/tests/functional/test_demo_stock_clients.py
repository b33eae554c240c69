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

"""The three stock clients, as the reaper page documents them, on --serve.

The openstack CLI and the nova CLI run as subprocesses, openstacksdk in this
process, each logged in to the sandbox's Keystone stand-in as its ``reaper``
user (the service and admin roles). Each finds a buried server, rebuilds it
with the documented call at 2.65 (the reaper path: below the threshold, the
installed Nova's maximum), sees it ACTIVE with its UUID, and sends the same
call again, as a reaper's retry: 409, nothing re-imaged. At the threshold a
retry would be Nova's ordinary rebuild (202), so that 409 also proves the
call went the reaper path.
"""

import os
import subprocess
import sys
import time

import fixtures
from keystoneauth1 import noauth
from keystoneauth1 import session
import openstack
from openstack import exceptions as sdk_exceptions
import testtools
from testtools import content

from nova_cell0_rebuild.tests.functional import test_demo
from nova_cell0_rebuild.tests import microversions as mv

#: What admin/reaper-integration.rst has the reaper send.
REAPER_VERSION = '2.65'
#: The threshold: the installed Nova's maximum, 2.104 on Nova 34.
THRESHOLD = mv.NOVA_MAX
_BIN = os.path.dirname(sys.executable)


class StockClientsTest(testtools.TestCase):
    """One sandbox for the three clients; each buries its own server."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.served = test_demo.ServedDemo(seconds=300)

    @classmethod
    def tearDownClass(cls):
        cls.served.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.endpoint = self.served.endpoint
        # The login of admin/reaper-integration.rst, against the sandbox.
        self.reaper_login = dict(
            test_demo._environment(), OS_AUTH_URL=self.served.auth_url,
            OS_USERNAME='reaper', OS_PASSWORD='sandbox',
            OS_PROJECT_NAME='service', OS_USER_DOMAIN_ID='default',
            OS_PROJECT_DOMAIN_ID='default')
        # Anyone else is a member of project sandbox.
        self.member_login = dict(self.reaper_login, OS_USERNAME='alice',
                                 OS_PROJECT_NAME='sandbox')
        self.admin = self._headers_session('admin', 'admin,member,reader')
        self.image_id = self._get('/servers/detail?all_tenants=1')[
            'servers'][0]['image']['id']

    def _headers_session(self, project, roles):
        """The harness's own calls, identified by the sandbox's headers."""
        return session.Session(auth=noauth.NoAuth(), additional_headers={
            'X-User-Id': 'admin' if 'admin' in roles else project + '-user',
            'X-Project-Id': project, 'X-Roles': roles,
            'OpenStack-API-Version': 'compute 2.1'})

    def _get(self, path, sess=None):
        return (sess or self.admin).get(self.endpoint + path).json()

    def _wait(self, server_id, *statuses, gone=False):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            resp = self.admin.get(
                '%s/servers/%s' % (self.endpoint, server_id), raise_exc=False)
            if gone and resp.status_code == 404:
                return None
            if not gone and resp.json()['server']['status'] in statuses:
                return resp.json()['server']
            time.sleep(0.2)
        self.fail('%s: not %s in 30 s' % (server_id, statuses or 'gone'))

    def _create(self, project, name):
        sess = self._headers_session(project, 'member,reader')
        body = {'server': {'name': name, 'imageRef': self.image_id,
                           'flavorRef': '1', 'networks': 'none'}}
        resp = sess.post(self.endpoint + '/servers', json=body,
                         headers={'OpenStack-API-Version': 'compute 2.37'})
        return resp.json()['server']['id']

    def _delete(self, server_id):
        self.admin.delete('%s/servers/%s' % (self.endpoint, server_id))
        self._wait(server_id, gone=True)

    def _bury(self, project='science', create=None):
        """A buried server of *project*, and room to rebuild it.

        :param create: creates the server instead, returns its id.
        """
        # The compute has room for one more server: fill it first.
        filler = self._create('other', 'filler')
        self._wait(filler, 'ACTIVE')
        server_id = (create or (lambda: self._create(project, 'buried')))()
        self.addCleanup(self._delete, server_id)
        self.assertEqual('ERROR', self._wait(server_id, 'ERROR', 'ACTIVE')[
            'status'])
        self._delete(filler)
        return server_id

    def _untouched(self, server_id):
        """What a re-image would change."""
        server = self._get('/servers/%s' % server_id)['server']
        actions = self._get('/servers/%s/os-instance-actions' % server_id)
        return (server['status'], server['updated'], server['image']['id'],
                len(actions['instanceActions']))

    def _landed(self, server_id):
        server = self._wait(server_id, 'ACTIVE', 'ERROR')
        self.assertEqual((server_id, 'ACTIVE'),
                         (server['id'], server['status']))
        return self._untouched(server_id)

    def _cli(self, command, *args, version=REAPER_VERSION, login=None):
        started = time.monotonic()
        done = subprocess.run(
            [os.path.join(_BIN, command), '--os-compute-api-version',
             version] + list(args),
            capture_output=True, text=True, timeout=60,
            env=login or self.reaper_login)
        self.addDetail('%s %s (%.1f s)' % (command, args[0],
                                           time.monotonic() - started),
                       content.text_content(done.stdout + done.stderr))
        return done

    def test_openstack_cli(self):
        server_id = self._bury()
        listed = self._cli('openstack', 'server', 'list', '--all-projects',
                           '--status', 'ERROR', '-f', 'value', '-c', 'ID')
        self.assertEqual(0, listed.returncode, listed.stderr)
        self.assertIn(server_id, listed.stdout.split())

        rebuild = ('server', 'rebuild', '--image', self.image_id, server_id)
        done = self._cli('openstack', *rebuild)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn(server_id, done.stdout)
        landed = self._landed(server_id)

        retry = self._cli('openstack', *rebuild)
        self.assertEqual(1, retry.returncode, retry.stdout)
        self.assertIn('409', retry.stderr)
        self.assertIn('Instance %s is not in cell0' % server_id, retry.stderr)
        self.assertEqual(landed, self._untouched(server_id))

    def test_nova_cli(self):
        server_id = self._bury()
        listed = self._cli('nova', 'list', '--all-tenants', '--status',
                           'ERROR')
        self.assertEqual(0, listed.returncode, listed.stderr)
        self.assertIn(server_id, listed.stdout)

        rebuild = ('rebuild', server_id, self.image_id)
        done = self._cli('nova', *rebuild)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn(server_id, done.stdout)
        landed = self._landed(server_id)

        retry = self._cli('nova', *rebuild)
        self.assertEqual(1, retry.returncode, retry.stdout)
        self.assertIn('ERROR (Conflict): Instance %s is not in cell0'
                      % server_id, retry.stderr)
        self.assertIn('(HTTP 409)', retry.stderr)
        self.assertEqual(landed, self._untouched(server_id))

    def test_openstacksdk(self):
        server_id = self._bury()
        conn = openstack.connect(
            auth_url=self.served.auth_url, username='reaper',
            password='sandbox', project_name='service',
            user_domain_id='default', project_domain_id='default',
            compute_api_version=REAPER_VERSION)
        self.addCleanup(conn.close)
        resp = conn.compute.get('/os-cell0-rebuild/servers?all_projects=True')
        resp.raise_for_status()
        self.assertIn((server_id, True),
                      [(buried['id'], buried['rebuildable'])
                       for buried in resp.json()['cell0_servers']])

        rebuilt = conn.compute.rebuild_server(server_id, self.image_id)
        self.assertEqual((server_id, 'BUILD'), (rebuilt.id, rebuilt.status))
        landed = self._landed(server_id)

        error = self.assertRaises(
            sdk_exceptions.ConflictException,
            conn.compute.rebuild_server, server_id, self.image_id)
        self.assertIn('Instance %s is not in cell0' % server_id, str(error))
        self.assertEqual(landed, self._untouched(server_id))


class ThresholdClientsTest(StockClientsTest):
    """A member's clients at the threshold, as the docs say each behaves.

    The openstack CLI sends an explicit --os-compute-api-version as given,
    and the plugin rebuilds the buried server; the nova CLI refuses a
    microversion above python-novaclient's cap before sending anything.
    The nova CLI at 2.1 with --file creates a server with personality
    files (the quick start's recipe), whose rebuild is refused.
    """

    # The reaper's tests run in the parent class; not again here.
    test_openstack_cli = test_nova_cli = test_openstacksdk = None

    def _member_cli(self, command, *args, version=THRESHOLD):
        return self._cli(command, *args, version=version,
                         login=self.member_login)

    def test_the_openstack_cli_rebuilds_at_the_threshold(self):
        server_id = self._bury(project='sandbox')
        done = self._member_cli('openstack', 'server', 'rebuild', '--image',
                                self.image_id, server_id)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn(server_id, done.stdout)
        self._landed(server_id)

    def test_the_nova_cli_is_capped(self):
        import novaclient
        server_id = self._bury(project='sandbox')
        done = self._member_cli('nova', 'rebuild', server_id, self.image_id)
        cap = novaclient.API_MAX_VERSION
        if novaclient.api_versions.APIVersion(THRESHOLD) <= cap:
            # Nova 29 and 30: the threshold is 2.96, which it sends.
            self.assertEqual(0, done.returncode, done.stderr)
            self._landed(server_id)
            return
        self.assertEqual(1, done.returncode, done.stdout)
        self.assertIn("ERROR (CommandError): The specified version isn't "
                      "supported by client. The valid version range is "
                      "'2.1' to '%s'" % cap.get_string(), done.stderr)
        self.assertEqual('ERROR', self._get('/servers/%s' % server_id)[
            'server']['status'])

    def test_the_nova_cli_creates_with_personality_files(self):
        files = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'motd')
        with open(files, 'w') as motd:
            motd.write('hello\n')

        def create():
            done = self._member_cli(
                'nova', 'boot', '--flavor', '1', '--image', self.image_id,
                '--file', '/etc/motd=%s' % files, 'with-files',
                version='2.1')
            self.assertEqual(0, done.returncode, done.stderr)
            return [line.split('|')[2].strip()
                    for line in done.stdout.splitlines()
                    if line.startswith('| id ')][0]
        server_id = self._bury(create=create)
        refused = self._member_cli('openstack', 'server', 'rebuild',
                                   '--image', self.image_id, server_id)
        self.assertEqual(1, refused.returncode, refused.stdout)
        self.assertIn('409', refused.stderr)
        self.assertIn('created with personality files', refused.stderr)
