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

"""nova-cell0-rebuild-aardvark-relay as an operator runs it: exit codes,
one-line errors, and a clean stop on SIGTERM. What it relays is tested on
a real RabbitMQ in ``tests/functional/test_aardvark_relay.py``.
"""

import os
import signal
import subprocess
import sys
import time

import fixtures
import testtools

PROG = 'nova-cell0-rebuild-aardvark-relay'


def _pbr_release():
    # What pip reports for a build (0.1.0.devN), pbr's release
    # string; read live, as an editable install's metadata may
    # be older than the last commit.
    import pbr.version
    return pbr.version.VersionInfo(
        'nova-cell0-rebuild').release_string()


class TestAardvarkRelayCommand(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.config = os.path.join(self.tmp, 'nova.conf')

    def _configure(self, text):
        with open(self.config, 'w') as conf:
            conf.write('[DEFAULT]\ntransport_url = fake:/\n' + text)

    def _command(self):
        return [sys.executable, '-c',
                'import sys; from nova_cell0_rebuild.cmd import '
                'aardvark_relay; sys.exit(aardvark_relay.main())',
                '--config-file', self.config]

    def _env(self):
        return {key: value for key, value in os.environ.items()
                if key != 'PYTHONWARNINGS'}

    def _run(self):
        proc = subprocess.run(self._command(), capture_output=True,
                              text=True, timeout=120, env=self._env())
        return proc.returncode, proc.stdout, proc.stderr

    def _assert_one_line_error(self, code, wanted, result):
        returned, out, err = result
        self.assertEqual(code, returned, err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('%s: error: ' % PROG, err)
        self.assertIn(wanted, err)

    def test_aardvark_version_must_be_named(self):
        self._configure('')
        self._assert_one_line_error(
            1, '[cell0_rebuild_relay] aardvark_events is not set: set it '
               'to all_in_one or master', self._run())

    def test_unknown_aardvark_version(self):
        self._configure('[cell0_rebuild_relay]\naardvark_events = megabus\n')
        self._assert_one_line_error(1, 'megabus', self._run())

    def test_missing_configuration_file_is_a_usage_error(self):
        self._assert_one_line_error(2, self.config, self._run())

    def test_help_says_what_the_relay_does(self):
        proc = subprocess.run(self._command()[:3] + ['--help'],
                              capture_output=True, text=True, timeout=120,
                              env=self._env())
        self.assertEqual(0, proc.returncode, proc.stderr)
        usage, description, options = proc.stdout.split('\n\n', 2)
        self.assertTrue(usage.startswith('usage: %s ' % PROG), usage)
        self.assertIn('Relay Nova\'s burials in cell0 to CERN\'s Aardvark',
                      description)
        self.assertIn('compute_task.build_instances.error', description)
        self.assertTrue(options.startswith('options:'), options[:40])

    def test_version_is_what_pip_reports(self):
        proc = subprocess.run(self._command()[:3] + ['--version'],
                              capture_output=True, text=True, timeout=120,
                              env=self._env())
        self.assertEqual(
            (0, _pbr_release() + '\n'),
            (proc.returncode, proc.stdout), proc.stderr)

    def test_stops_on_sigterm(self):
        self._configure('[cell0_rebuild_relay]\naardvark_events = master\n')
        log = os.path.join(self.tmp, 'relay.log')
        proc = subprocess.Popen(self._command() + ['--log-file', log],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=self._env())
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 90
        while '%s started' % PROG not in self._read(log):
            if proc.poll() is not None:
                self.fail('exited with %s: %s' % (proc.returncode,
                                                  proc.communicate()))
            self.assertLess(time.monotonic(), deadline, self._read(log))
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(0, proc.returncode, err)
        self.assertIn('%s stopped' % PROG, self._read(log))

    def _read(self, path):
        try:
            with open(path) as log:
                return log.read()
        except OSError:
            return ''
