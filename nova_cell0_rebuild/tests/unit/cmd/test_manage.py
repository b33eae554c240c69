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

"""nova-cell0-rebuild-manage, run as an operator runs it."""

import os
import socket
import subprocess
import sys

import fixtures
from oslotest import base

from nova_cell0_rebuild.db import migration

SERVER = '8c2f0a4e-3b1d-4f5a-9e6c-7d8b9a0c1e2f'


class TestManage(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.db = os.path.join(self.tmp, 'cell0_rebuild.db')
        self.config = os.path.join(self.tmp, 'nova.conf')
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\nconnection = sqlite:///%s\n'
                       % self.db)

    def _manage(self, *args):
        # As an operator runs it: without the test env's warning settings.
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONWARNINGS'}
        proc = subprocess.run(
            [sys.executable, '-c',
             'import sys; from nova_cell0_rebuild.cmd import manage; '
             'sys.exit(manage.main())',
             '--config-file', self.config] + list(args),
            capture_output=True, text=True, timeout=120, env=env)
        return proc.returncode, proc.stdout, proc.stderr

    def test_db_version_sync_version(self):
        self.assertEqual((0, 'None\n'), self._manage('db', 'version')[:2])
        code, out, err = self._manage('db', 'sync')
        self.assertEqual(0, code, err)
        self.assertIn(migration.head_version(), out)
        self.assertEqual((0, migration.head_version() + '\n'),
                         self._manage('db', 'version')[:2])

    def test_error_is_one_line(self):
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\n'
                       'connection = sqlite:////no/dir/x.db\n')
        code, out, err = self._manage('db', 'sync')
        self.assertEqual(1, code)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('nova-cell0-rebuild-manage: error:', err)

    def test_error_details_go_to_the_log_file(self):
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\n'
                       'connection = sqlite:////no/dir/x.db\n')
        log_file = os.path.join(self.tmp, 'manage.log')
        code, out, err = self._manage('--log-file', log_file, 'db', 'sync')
        self.assertEqual(1, code)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('details are in %s' % log_file, err)
        with open(log_file) as log:
            logged = log.read()
        self.assertIn('Traceback (most recent call last)', logged)
        self.assertIn('db sync failed', logged)

    def test_without_a_log_the_error_says_how_to_get_one(self):
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\n'
                       'connection = sqlite:////no/dir/x.db\n')
        code, out, err = self._manage('db', 'sync')
        self.assertEqual(1, code)
        self.assertIn('--log-file', err)
        self.assertEqual('', out)

    def test_usage(self):
        code, out, err = self._manage('db')
        self.assertEqual(2, code)

    def test_rebuild_without_service_credentials(self):
        code, out, err = self._manage('rebuild', SERVER)
        self.assertEqual(1, code)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('nova-cell0-rebuild-manage: error:', err)
        self.assertIn('[cell0_rebuild_client]', err)
        self.assertIn('[service_user]', err)
        self.assertEqual('', out)

    def test_rebuild_when_keystone_cannot_be_reached(self):
        # A port nothing listens on: the connection is refused at once.
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            auth_url = 'http://127.0.0.1:%d/identity/v3' % (
                sock.getsockname()[1])
        with open(self.config, 'a') as conf:
            conf.write('[cell0_rebuild_client]\n'
                       'auth_type = password\n'
                       'auth_url = %s\n'
                       'username = nova\n'
                       'password = secret\n'
                       'project_name = service\n'
                       'user_domain_name = Default\n'
                       'project_domain_name = Default\n' % auth_url)
        code, out, err = self._manage('rebuild', SERVER)
        self.assertEqual(1, code)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('[cell0_rebuild_client] at %s' % auth_url, err)
        self.assertNotIn('secret', err)
