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

import datetime
import os
import socket
import subprocess
import sys

import fixtures
from oslotest import base
import pbr.version
import sqlalchemy as sa

from nova_cell0_rebuild.cmd import manage
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.tests.unit.cmd import test_status

SERVER = '8c2f0a4e-3b1d-4f5a-9e6c-7d8b9a0c1e2f'
#: The plugin's first migration: tables behind this code.
FIRST_REVISION = '6f2a0c1d9b3e'


def _pbr_release():
    # What pip reports for a build (0.1.0.devN), pbr's release
    # string; read live, as an editable install's metadata may
    # be older than the last commit.
    import pbr.version
    return pbr.version.VersionInfo(
        'nova-cell0-rebuild').release_string()


class TestManage(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.db = os.path.join(self.tmp, 'cell0_rebuild.db')
        self.config = os.path.join(self.tmp, 'nova.conf')
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\nconnection = sqlite:///%s\n'
                       % self.db)

    def _manage(self, *args, config=True):
        # As an operator runs it: without the test env's warning settings,
        # and with a home of its own, where no nova.conf is found.
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONWARNINGS'}
        env['HOME'] = os.path.join(self.tmp, 'home')
        proc = subprocess.run(
            [sys.executable, '-c',
             'import sys; from nova_cell0_rebuild.cmd import manage; '
             'sys.exit(manage.main())'] +
            (['--config-file', self.config] if config else []) + list(args),
            capture_output=True, text=True, timeout=120, env=env)
        return proc.returncode, proc.stdout, proc.stderr

    def _with_nova_databases(self):
        """Nova's API database (cell0 mapped) and cell0, in SQLite."""
        api_url, cell0_url = test_status._nova_databases(self.tmp)
        with open(self.config, 'a') as conf:
            conf.write('[api_database]\nconnection = %s\n'
                       '[database]\nconnection = %s\n' % (api_url, cell0_url))
        migration.db_sync(sa.create_engine('sqlite:///%s' % self.db))

    def test_version_is_ours(self):
        # What pip reports (0.1.0.devN between releases), not pbr's short
        # version_string (0.1.0), and not Nova's.
        ours = _pbr_release()
        nova = pbr.version.VersionInfo('nova').release_string()
        self.assertNotEqual(ours, nova)
        code, out, err = self._manage('--version', config=False)
        self.assertEqual((0, ours + '\n'), (code, out), err)
        # Anywhere before the command, as argparse reads it.
        self.assertEqual((0, ours + '\n'), self._manage('--version')[:2])

    def test_unparseable_configuration_file(self):
        for text in ('[DEFAULT\ndebug = true\n', 'just some garbage\n'):
            with open(self.config, 'w') as conf:
                conf.write(text)
            code, out, err = self._manage('list')
            self.assertEqual(1, code, err)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn('nova-cell0-rebuild-manage: error:', err)
            self.assertIn(self.config, err)
            self.assertEqual('', out)

    def _assert_argument_refused(self, args, argument, says):
        """argparse's usage, then one error line; no database read."""
        # A database that cannot be opened: reading it would be exit 1.
        with open(self.config, 'w') as conf:
            conf.write('[cell0_rebuild]\nconnection = sqlite:////no/dir/x.db\n'
                       '[api_database]\nconnection = sqlite:////no/dir/a.db\n')
        code, out, err = self._manage(*args)
        self.assertEqual((2, ''), (code, out), err)
        errors = [line for line in err.splitlines() if 'error:' in line]
        self.assertEqual([err.splitlines()[-1]], errors, err)
        self.assertRegex(errors[0], r'^nova-cell0-rebuild-manage [a-z ]+: '
                         r'error: argument %s: ' % argument)
        self.assertIn(says, errors[0])

    def test_show_takes_a_server_uuid(self):
        self._assert_argument_refused(['show', 'not-a-uuid'],
                                      '<server uuid>',
                                      "'not-a-uuid' is not a server UUID")

    def test_rebuild_takes_a_server_uuid(self):
        self._assert_argument_refused(['rebuild', SERVER[:-1]],
                                      '<server uuid>', 'is not a server UUID')

    def test_list_page_size_is_positive(self):
        for value in ('0', '-5'):
            self._assert_argument_refused(
                ['list', '--page-size', value], '--page-size',
                "%r is not a positive integer" % value)

    def test_list_pages_is_positive(self):
        self._assert_argument_refused(['list', '--pages', '0'], '--pages',
                                      "'0' is not a positive integer")

    def test_list_older_than_is_not_negative(self):
        self._assert_argument_refused(
            ['list', '--older-than', '-1'], '--older-than',
            "'-1' is not a non-negative integer")

    def test_list_marker_is_a_server_uuid(self):
        self._assert_argument_refused(['list', '--marker', 'next'],
                                      '--marker',
                                      "'next' is not a server UUID")

    def test_heal_instance_is_a_server_uuid(self):
        self._assert_argument_refused(['heal', '--instance', 'web-1'],
                                      '--instance',
                                      "'web-1' is not a server UUID")

    def test_heal_older_than_is_not_negative(self):
        self._assert_argument_refused(
            ['heal', '--older-than', '-300'], '--older-than',
            "'-300' is not a non-negative integer")

    def test_show_of_an_unknown_server_is_not_found(self):
        self._with_nova_databases()
        code, out, err = self._manage('show', SERVER)
        self.assertEqual(4, code, err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('%s not found' % SERVER, err)
        self.assertEqual('', out)

    def test_purge_before(self):
        self._with_nova_databases()
        code, out, err = self._manage('purge', '--before', '7d',
                                      '--dry-run')
        self.assertEqual(0, code, err)
        self.assertIn('Would delete 0 create records', out)
        code, out, err = self._manage('purge', '--before', 'yesterday')
        self.assertEqual(2, code, err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn("invalid --before 'yesterday': give an age", err)
        self.assertEqual('', out)

    def test_db_version_sync_version(self):
        code, out, err = self._manage('db', 'version')
        self.assertEqual((5, ''), (code, out), err)
        code, out, err = self._manage('db', 'sync')
        self.assertEqual(0, code, err)
        self.assertIn(migration.head_version(), out)
        self.assertEqual((0, migration.head_version() + '\n'),
                         self._manage('db', 'version')[:2])

    def test_every_command_without_the_tables_says_db_sync(self):
        # Nova's databases, but db sync was not run: no table of ours.
        api_url, cell0_url = test_status._nova_databases(self.tmp)
        with open(self.config, 'a') as conf:
            conf.write('[api_database]\nconnection = %s\n' % api_url)
        for command in (['db', 'version'], ['list'], ['show', SERVER],
                        ['heal'], ['rebuild', SERVER], ['purge'],
                        ['purge', '--dry-run']):
            code, out, err = self._manage(*command)
            self.assertEqual((5, ''), (code, out), command)
            self.assertEqual(
                "nova-cell0-rebuild-manage: error: The plugin's tables do "
                "not exist. Run nova-cell0-rebuild-manage db sync.\n", err)

    def test_db_version_of_tables_behind_this_code(self):
        migration.db_sync(sa.create_engine('sqlite:///%s' % self.db),
                          version=FIRST_REVISION)
        code, out, err = self._manage('db', 'version')
        self.assertEqual((5, FIRST_REVISION + '\n'), (code, out), err)
        self.assertIn('are at revision %s, this code needs %s. Run '
                      'nova-cell0-rebuild-manage db sync.'
                      % (FIRST_REVISION, migration.head_version()), err)

    def test_without_a_configuration_file(self):
        code, out, err = self._manage('list', config=False)
        self.assertEqual((1, ''), (code, out), err)
        self.assertEqual(
            'nova-cell0-rebuild-manage: error: [api_database] connection is '
            'not set: no configuration file was found (looked for nova.conf '
            'and nova-cell0-rebuild-manage.conf in ~/.nova/, ~/, '
            '/etc/nova/, /etc/); give one with --config-file\n', err)
        # The plugin's tables can live in a database of their own.
        code, out, err = self._manage('db', 'sync', config=False)
        self.assertEqual((1, ''), (code, out), err)
        self.assertIn('error: [cell0_rebuild] connection or [api_database] '
                      'connection is not set: no configuration file', err)

    def test_configuration_file_without_the_database(self):
        # The plugin's tables are found, Nova's API database is not.
        code, out, err = self._manage('heal')
        self.assertEqual((1, ''), (code, out), err)
        self.assertEqual('nova-cell0-rebuild-manage: error: [api_database] '
                         'connection is not set in %s\n' % self.config, err)

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
        self._with_nova_databases()
        code, out, err = self._manage('rebuild', SERVER)
        self.assertEqual(1, code)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('nova-cell0-rebuild-manage: error:', err)
        self.assertIn('[cell0_rebuild_client]', err)
        self.assertIn('[service_user]', err)
        self.assertEqual('', out)

    def test_rebuild_with_a_malformed_min_microversion(self):
        self._with_nova_databases()
        with open(self.config, 'a') as conf:
            conf.write('[cell0_rebuild]\nmin_microversion = 2.x\n')
        code, out, err = self._manage('rebuild', SERVER)
        self.assertEqual((1, ''), (code, out), err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn("error: Invalid [cell0_rebuild] configuration: "
                      "min_microversion '2.x' is not a microversion: give "
                      "2.N, from 2.57 to ", err)
        self.assertNotIn('LocationInfo', err)

    def test_rebuild_when_keystone_cannot_be_reached(self):
        # A port nothing listens on: the connection is refused at once.
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            auth_url = 'http://127.0.0.1:%d/identity/v3' % (
                sock.getsockname()[1])
        self._with_nova_databases()
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


class BeforeCutoffTest(base.BaseTestCase):
    """What purge --before accepts, as its help says."""

    NOW = datetime.datetime(2026, 3, 8, 12, 0, 0)

    def test_ages(self):
        for value, ago in (('7d', dict(days=7)), ('12h', dict(hours=12)),
                           ('30m', dict(minutes=30)), ('90s', dict(
                               seconds=90)), ('2w', dict(weeks=2)),
                           ('0d', {})):
            self.assertEqual(self.NOW - datetime.timedelta(**ago),
                             manage.before_cutoff(value, now=self.NOW),
                             value)

    def test_dates_and_times_in_utc(self):
        for value, when in (
                ('2026-03-01', (2026, 3, 1)),
                ('2026-03-01 12:30:00', (2026, 3, 1, 12, 30)),
                ('2026-03-01T12:30:00', (2026, 3, 1, 12, 30)),
                ('2026-03-01T12:30:00Z', (2026, 3, 1, 12, 30)),
                ('2026-03-01T12:30:00+01:00', (2026, 3, 1, 11, 30)),
                # What date -u prints, and nova-manage db purge takes.
                ('Sun Mar  1 12:30:00 UTC 2026', (2026, 3, 1, 12, 30))):
            cutoff = manage.before_cutoff(value, now=self.NOW)
            self.assertEqual(datetime.datetime(*when), cutoff, value)
            self.assertIsNone(cutoff.tzinfo, value)

    def test_what_it_does_not_take(self):
        for value in ('yesterday', '7x', '-7d', '2026-13-01', '',
                      # A zone it does not know would be dropped silently.
                      'Sun Mar  1 12:30:00 CET 2026',
                      '99999999999d', '99999999999'):
            error = self.assertRaises(ValueError, manage.before_cutoff,
                                      value, now=self.NOW)
            self.assertEqual(1, len(str(error).splitlines()), value)
            self.assertIn('invalid --before %r: give an age' % value,
                          str(error))
