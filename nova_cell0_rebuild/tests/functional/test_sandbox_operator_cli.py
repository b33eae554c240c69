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

"""The operator commands against ``nova-cell0-rebuild-demo --serve``.

The demo keeps Nova's databases in files and prints a configuration file;
``nova-cell0-rebuild-manage`` and ``nova-cell0-rebuild-status``, run as
operators run them (other processes), act on the sandbox with it. One
sandbox serves every command: each costs a Python start with Nova imported.
"""

import json
import os
import re
import subprocess
import sys

import testtools

from nova_cell0_rebuild.tests.functional import test_demo

CONFIG_LINE = re.compile(
    r'sandbox\s+configuration for nova-cell0-rebuild-manage and -status: '
    r'(?P<path>\S+)')
_COMMAND = ('import sys; from nova_cell0_rebuild.cmd import %s; '
            'sys.exit(%s.main())')


def _start(command, config_file, *args):
    """nova-cell0-rebuild-<command> with the sandbox's configuration."""
    return subprocess.Popen(
        [sys.executable, '-c', _COMMAND % (command, command),
         '--config-file', config_file] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=test_demo._environment())


def _finish(process, timeout=180):
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


class OperatorCommandsOnTheSandboxTest(testtools.TestCase):
    """manage and status, given the file --serve prints, see its cloud."""

    def setUp(self):
        super().setUp()
        self.served = test_demo.ServedDemo(seconds=300)
        self.addCleanup(self.served.stop)
        found = CONFIG_LINE.search(self.served.text)
        self.assertIsNotNone(found, self.served.text)
        self.config_file = found.group('path')

    def _check(self, name, result, expected_rc=0):
        rc, out, err = result
        self.assertEqual(expected_rc, rc, '%s:\n%s\n%s' % (name, out, err))
        return out

    def test_manage_and_status_act_on_the_sandbox(self):
        # The banner says how; the file names Nova's databases.
        self.assertIn('nova-cell0-rebuild-manage --config-file %s list'
                      % self.config_file, self.served.text)
        with open(self.config_file) as config:
            text = config.read()
        state_dir = os.path.dirname(self.config_file)
        self.assertIn('connection = sqlite:///%s/api.sqlite' % state_dir,
                      text)
        # Readers in parallel, as operators may run them.
        running = {
            'list': _start('manage', self.config_file,
                           'list', '--format', 'json'),
            'db version': _start('manage', self.config_file,
                                 'db', 'version'),
            'heal': _start('manage', self.config_file, 'heal'),
            'status': _start('status', self.config_file,
                             'upgrade', 'check', '--json'),
        }
        results = {name: _finish(process)
                   for name, process in running.items()}

        # The scenario's last server, created with personality files, is
        # buried in cell0 and refused by the personality gate.
        listed = json.loads(self._check('list', results['list']))
        self.assertEqual([('sci-files', 'science', False, 'personality')],
                         [(entry['name'], entry['project_id'],
                           entry['rebuildable'], entry['refused_by'])
                          for entry in listed])
        self.assertRegex(self._check('db version', results['db version']),
                         r'^[0-9a-f]{12}\n$')
        self.assertIn('Interrupted at', self._check('heal', results['heal']))
        # Every check passes (code 0), the pipeline's and the tables' too.
        checks = json.loads(self._check('status', results['status']))
        codes = {check['check']: check['result']
                 for check in checks['checks']}
        self.assertIn('API pipeline', codes)
        self.assertIn('Database', codes)
        self.assertEqual({0}, set(codes.values()), checks)

        uuid = listed[0]['uuid']
        show = _start('manage', self.config_file, 'show', uuid)
        # rebuild cannot reach the sandbox's conductor (its bus is in the
        # demo's process): the file gives it no credentials, so it stops
        # before changing anything, and says why.
        rebuild = _start('manage', self.config_file, 'rebuild', uuid)
        shown = json.loads(self._check('show', _finish(show)))
        rc, out, err = _finish(rebuild)
        self.assertEqual((1, ''), (rc, out), err)
        self.assertIn('No credentials to authenticate as a service', err)
        self.assertEqual((uuid, 'cell0'), (shown['uuid'], shown['mapped_to']),
                         shown)
        self.assertTrue(shown['create_record'], shown)

        # The sandbox served on, undisturbed, and its temporary directory
        # goes with it.
        self.assertEqual(0, self.served.stop(), self.served.text)
        self.assertFalse(os.path.exists(state_dir), os.listdir(state_dir)
                         if os.path.exists(state_dir) else None)
