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

"""nova-cell0-rebuild-status upgrade check: the configuration checks.

The database checks run on real Nova databases in
``tests/functional/test_status.py``; the command as an operator runs it is
at the end of this file.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys

import fixtures
from nova.conf import rpc as nova_rpc_conf
from nova import context as nova_context
from nova.db.api import models as api_models
from nova.db.main import models as main_models
import oslo_messaging
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.cmd import status
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.tests import microversions as mv
from nova_cell0_rebuild.tests.unit.api import test_pipeline_position as paste
from nova_cell0_rebuild.tests.unit import base

Code = upgradecheck.Code


def _pbr_release():
    # What pip reports for a build (0.1.0.devN), pbr's release
    # string; read live, as an editable install's metadata may
    # be older than the last commit.
    import pbr.version
    return pbr.version.VersionInfo(
        'nova-cell0-rebuild').release_string()


class PipelineCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Where Nova's WSGI application would look: empty unless a test
        # puts a paste file there.
        self.wsgi_dir = os.path.join(self.tmp, 'wsgi')
        os.mkdir(self.wsgi_dir)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_NOVA_CONFIG_DIR', self.wsgi_dir))
        self.useFixture(fixtures.EnvironmentVariable('OS_NOVA_CONFIG_FILES'))

    def _configure(self, text):
        path = os.path.join(self.tmp, 'api-paste.ini')
        with open(path, 'w') as paste_file:
            paste_file.write(text)
        self.conf.set_override('api_paste_config', path, group='wsgi')
        return path

    def _check(self):
        return status.UpgradeCommands()._check_pipeline()

    def test_success(self):
        path = self._configure(paste.shipped_text())
        result = self._check()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn(path, result.details)

    def test_warning_when_not_right_after_keystonecontext(self):
        self._configure(paste.variant((paste.LEGACY_TAIL, (
            'keystonecontext legacy_v2_compatible cell0_rebuild'))))
        result = self._check()
        self.assertEqual(Code.WARNING, result.code, result.details)
        self.assertIn(paste.LEGACY, result.details)
        self.assertNotIn(paste.V21 + ' ', result.details)

    def test_failure_when_missing_from_one_pipeline(self):
        self._configure(paste.variant((paste.V21_LINE, paste.V21_LINE.replace(
            ' cell0_rebuild', ''))))
        result = self._check()
        self.assertEqual(Code.FAILURE, result.code, result.details)
        self.assertIn('%s of ' % paste.V21, result.details)
        self.assertIn(': missing', result.details)

    def test_failure_when_before_keystonecontext(self):
        self._configure(paste.variant((paste.V21_LINE, paste.V21_LINE.replace(
            'authtoken keystonecontext cell0_rebuild',
            'cell0_rebuild authtoken keystonecontext'))))
        self.assertEqual(Code.FAILURE, self._check().code)

    def test_failure_when_no_paste_file_is_found(self):
        self.conf.set_override('api_paste_config',
                               os.path.join(self.tmp, 'nowhere.ini'),
                               group='wsgi')
        result = self._check()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('nowhere.ini', result.details)
        self.assertIn(os.path.join(self.wsgi_dir, 'api-paste.ini'),
                      result.details)

    def test_the_file_of_nova_wsgi_application_is_checked_too(self):
        self._configure(paste.shipped_text())
        shutil.copy(os.path.join(os.path.dirname(paste.SHIPPED),
                                 'api-paste.ini'), self.wsgi_dir)
        self.assertEqual(Code.SUCCESS, self._check().code)
        with open(os.path.join(self.wsgi_dir, 'api-paste.ini'), 'w') as f:
            f.write(paste.variant(('cell0_rebuild osapi', 'osapi')))
        result = self._check()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn(self.wsgi_dir, result.details)

    def test_failure_when_not_nova_api_paste_file(self):
        self._configure('[app:x]\npaste.app_factory = x:y\n')
        result = self._check()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('composite:osapi_compute', result.details)


class ConfigurationChecksTest(base.TestCase):

    def _override(self, **values):
        for name, value in values.items():
            self.conf.set_override(name, value, group='cell0_rebuild')

    def test_min_microversion(self):
        command = status.UpgradeCommands()
        result = command._check_min_microversion()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('microversion %s, the maximum of the installed Nova'
                      % mv.NOVA_MAX, result.details)
        self.assertIn('min_microversion is unset', result.details)
        self._override(min_microversion='2.65')
        result = command._check_min_microversion()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('from microversion 2.65.', result.details)
        for value in ('2.56', '2.999'):
            self._override(min_microversion=value)
            result = command._check_min_microversion()
            self.assertEqual(Code.FAILURE, result.code, value)
            self.assertIn(value, result.details)
            self.assertIn('nova-api will not load the filter',
                          result.details)

    def test_gates(self):
        command = status.UpgradeCommands()
        result = command._check_gates()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('state, lock, fault, record, personality, quota',
                      result.details)
        self._override(enabled_gates=['state', 'lock', 'fault', 'quota'])
        result = command._check_gates()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('not enabled: record, personality', result.details)
        self._override(enabled_gates=['state', 'typo'])
        result = command._check_gates()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('typo', result.details)
        # One sentence, then the next: no "installed?." nor "..".
        self.assertIn('install the package that provides it, or leave the '
                      'name out. nova-api will not load the filter.',
                      result.details)
        self.assertNotRegex(result.details, r'[?.!]\.')


class DurableQueuesCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # What Nova's configuration parsing does (nova.rpc.init): a
        # transport, which registers [oslo_messaging_rabbit].
        oslo_messaging.get_rpc_transport(self.conf,
                                         url='rabbit://rabbit1/').cleanup()

    def _check(self, transport_url=None, **rabbit):
        self.conf.set_override('transport_url', transport_url)
        for name, value in rabbit.items():
            self.conf.set_override(name, value,
                                   group='oslo_messaging_rabbit')
        return status.UpgradeCommands()._check_durable_queues()

    def test_transient_queues_warn(self):
        # oslo.messaging's defaults: a cast RabbitMQ holds when it
        # restarts is lost (tests/functional/test_cast_across_restart.py).
        for url in (None, 'rabbit://nova:secret@rabbit1:5672/'):
            result = self._check(url)
            self.assertEqual(Code.WARNING, result.code, url)
            self.assertIn('rabbit_quorum_queue = true', result.details)
            self.assertIn('stays in BUILD', result.details)

    def test_quorum_queues_succeed(self):
        result = self._check('rabbit://rabbit1/', rabbit_quorum_queue=True)
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('rabbit_quorum_queue = true', result.details)

    def test_durable_classic_queues_succeed(self):
        result = self._check('rabbit://rabbit1/', amqp_durable_queues=True)
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('amqp_durable_queues = true', result.details)

    def test_not_rabbitmq_is_not_checked(self):
        result = self._check('kafka://broker1:9092/')
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('Not RabbitMQ (kafka)', result.details)


def _nova_databases(tmp):
    """An API database with cell0 mapped, and an empty cell0 database."""
    cell0_url = 'sqlite:///%s' % os.path.join(tmp, 'cell0.db')
    main_models.BASE.metadata.create_all(sa.create_engine(cell0_url))
    api_url = 'sqlite:///%s' % os.path.join(tmp, 'api.db')
    api_engine = sa.create_engine(api_url)
    api_models.BASE.metadata.create_all(api_engine)
    with api_engine.begin() as conn:
        conn.execute(api_models.CellMapping.__table__.insert().values(
            uuid='00000000-0000-0000-0000-000000000000', name='cell0',
            transport_url='none:///', database_connection=cell0_url,
            disabled=False))
    return api_url, cell0_url


class StatusCommandTest(base.TestCase):
    """The console script, run as an operator runs it."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        api_url, cell0_url = _nova_databases(self.tmp)
        self.plugin_url = 'sqlite:///%s' % os.path.join(self.tmp, 'plugin.db')
        self.config = os.path.join(self.tmp, 'nova.conf')
        with open(self.config, 'w') as conf:
            conf.write('[api_database]\nconnection = %s\n'
                       '[database]\nconnection = %s\n'
                       '[oslo_messaging_rabbit]\n'
                       'rabbit_quorum_queue = true\n'
                       # Last: tests append [cell0_rebuild] options.
                       '[cell0_rebuild]\nconnection = %s\n'
                       % (api_url, cell0_url, self.plugin_url))
        # Found as nova-api finds it: beside nova.conf, by its default name.
        shutil.copy(paste.SHIPPED, self.tmp)

    def _status(self, *args):
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONWARNINGS'}
        env['OS_NOVA_CONFIG_DIR'] = self.tmp
        script = os.path.join(os.path.dirname(sys.executable),
                              status.PROG)
        proc = subprocess.run([script] + list(args), capture_output=True,
                              text=True, timeout=120, env=env)
        return proc.returncode, proc.stdout, proc.stderr

    def _check(self):
        code, out, err = self._status('--config-file', self.config,
                                      'upgrade', 'check', '--json')
        results = json.loads(out.strip().splitlines()[-1])
        return code, {check['check']: check['result']
                      for check in results['checks']}, err

    def test_every_check_succeeds(self):
        migration.db_sync(sa.create_engine(self.plugin_url))
        code, results, err = self._check()
        self.assertEqual(0, code, err)
        self.assertEqual(8, len(results))
        self.assertEqual({Code.SUCCESS}, set(results.values()), results)

    def test_malformed_min_microversion_is_one_line(self):
        migration.db_sync(sa.create_engine(self.plugin_url))
        with open(self.config, 'a') as conf:
            conf.write('min_microversion = 2.x\n')
        code, out, err = self._status('--config-file', self.config,
                                      'upgrade', 'check', '--json')
        self.assertEqual(2, code, err)
        check, = [check for check in json.loads(out)['checks']
                  if check['check'] == 'Minimum microversion']
        self.assertEqual(
            {'check': 'Minimum microversion', 'result': Code.FAILURE,
             'details': "Invalid [cell0_rebuild] configuration: "
                        "min_microversion '2.x' is not a microversion: give "
                        "2.N, from 2.57 to %s, the maximum of the installed "
                        "Nova. nova-api will not load the filter."
                        % mv.NOVA_MAX}, check)
        self.assertNotIn('LocationInfo', out + err)

    def test_tables_not_created_is_a_failure(self):
        code, results, err = self._check()
        self.assertEqual(2, code, err)
        self.assertEqual(Code.FAILURE, results['Database'])

    def test_table_output(self):
        migration.db_sync(sa.create_engine(self.plugin_url))
        code, out, err = self._status('--config-file', self.config,
                                      'upgrade', 'check')
        self.assertEqual(0, code, err)
        self.assertEqual(8, out.count('Result: Success'), out)

    def test_missing_configuration_file(self):
        code, out, err = self._status(
            '--config-file', os.path.join(self.tmp, 'none.conf'),
            'upgrade', 'check')
        self.assertEqual(255, code)
        self.assertIn('none.conf', err)

    def test_no_configuration_file_names_where_and_what(self):
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONWARNINGS'}
        # No nova.conf anywhere oslo.config looks (a HOME of its own; a
        # host with /etc/nova/nova.conf has one, then nothing is checked).
        home = self.useFixture(fixtures.TempDir()).path
        env['HOME'] = home
        env.pop('OS_NOVA_CONFIG_DIR', None)
        if os.path.exists('/etc/nova/nova.conf') or os.path.exists(
                '/etc/nova-cell0-rebuild-status.conf'):
            self.skipTest('this host has a configuration file')
        script = os.path.join(os.path.dirname(sys.executable), status.PROG)
        proc = subprocess.run([script, 'upgrade', 'check', '--json'],
                              capture_output=True, text=True, timeout=120,
                              env=env, cwd=home)
        checks = {check['check']: check['details'] for check in json.loads(
            proc.stdout.strip().splitlines()[-1])['checks']}
        looked = ('no configuration file was found (looked for nova.conf '
                  'and nova-cell0-rebuild-status.conf in ~/.nova/, ~/, '
                  '/etc/nova/, /etc/); give one with --config-file')
        self.assertEqual('[cell0_rebuild] connection or [api_database] '
                         'connection is not set: ' + looked,
                         checks['Database'])
        self.assertEqual('Servers in cell0 cannot be counted: '
                         '[api_database] connection is not set: ' + looked,
                         checks['Servers in cell0 without a create record'])
        self.assertNotIn('sql_connection', proc.stdout)

    def test_unparseable_configuration_file(self):
        with open(self.config, 'w') as conf:
            conf.write('[DEFAULT\ndebug = true\n')
        code, out, err = self._status('--config-file', self.config,
                                      'upgrade', 'check')
        self.assertEqual(255, code, err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('nova-cell0-rebuild-status: error:', err)
        self.assertIn(self.config, err)
        self.assertEqual('', out)

    def test_version_is_ours(self):
        # What pip reports, 0.1.0.devN between releases.
        ours = _pbr_release()
        code, out, err = self._status('--version')
        self.assertEqual((0, ours + '\n'), (code, out), err)


class HandOffTimeoutCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        nova_rpc_conf.register_opts(self.conf)

    def _check(self, **overrides):
        for name, value in overrides.items():
            group = 'cell0_rebuild' if name == 'hand_off_timeout' else None
            self.conf.set_override(name, value, group=group)
        return status.UpgradeCommands()._check_hand_off_timeout()

    def test_defaults_succeed(self):
        # 3600 s against Nova's 1800 s.
        result = self._check()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('(3600 s)', result.details)

    def test_not_longer_than_the_scheduler_call_warns(self):
        for overrides in ({'hand_off_timeout': 1800},
                          {'long_rpc_timeout': 7200}):
            result = self._check(**overrides)
            self.assertEqual(Code.WARNING, result.code, overrides)
            self.assertIn('deletes its mapping', result.details)


class PendingCheckTest(base.DBTestCase):
    """The pending dispatcher's heartbeat (the epoch row)."""

    def setUp(self):
        super().setUp()
        self.conf.set_override('enabled', True,
                               group='cell0_rebuild_pending')
        self.context = nova_context.get_admin_context()

    def _check(self):
        return status.UpgradeCommands()._check_pending()

    def _beat(self, seconds_ago):
        objects.PendingEpoch.take(
            self.context, leader.NAME, 'host-a:12',
            now=timeutils.utcnow() - datetime.timedelta(
                seconds=seconds_ago))

    def test_not_enabled_succeeds_without_a_dispatcher(self):
        self.conf.set_override('enabled', False,
                               group='cell0_rebuild_pending')
        result = self._check()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('not enabled', result.details)

    def test_enabled_without_any_dispatcher_ever_warns(self):
        result = self._check()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('no nova-cell0-rebuild-pending has run',
                      result.details)

    def test_a_fresh_heartbeat_succeeds(self):
        self._beat(leader.STALE_SECONDS - 5)
        result = self._check()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('on host-a:12 dispatches (epoch 1', result.details)

    def test_a_heartbeat_older_than_ninety_seconds_warns(self):
        self._beat(leader.STALE_SECONDS + 5)
        result = self._check()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('No nova-cell0-rebuild-pending dispatches: the last '
                      'one (host-a:12, epoch 1) beat 95 seconds ago, more '
                      'than 90.', result.details)
