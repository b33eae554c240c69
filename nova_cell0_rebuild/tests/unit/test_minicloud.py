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

"""tools/minicloud: which processes ``down`` takes for the cloud's.

minicloud.py is a script of its folder (it imports its neighbours by
name), so it is run as one, in a process of its own, under ``timeout`` as
CI runs it.
"""

import json
import os
import shutil
import subprocess
import sys

import fixtures
from oslotest import base

MINICLOUD = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), 'tools', 'minicloud')
#: Prints what leftover_pids finds for the working directory argv[1].
LEFTOVERS = ('import json, sys; sys.path.insert(0, sys.argv[2]); '
             'import minicloud; '
             'print(json.dumps(minicloud.leftover_pids(sys.argv[1])))')
SLEEP = 'import time; time.sleep(120)'


class LeftoverPidsTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        if not shutil.which('timeout'):
            self.skipTest('no timeout command')
        self.workdir = self.useFixture(fixtures.TempDir()).path

    def _sleeper(self, **popen):
        """A process whose command line names the working directory."""
        process = subprocess.Popen([sys.executable, '-c', SLEEP,
                                    self.workdir], **popen)
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        return process

    def test_services_only(self):
        # Started as Processes.start starts a service: found.
        service = self._sleeper(start_new_session=True)
        # Of the caller's session, as the tee of "up | tee": not found.
        self._sleeper()
        # The wrapper and the checker name the directory too: not found.
        done = subprocess.run(
            ['timeout', '60', sys.executable, '-c', LEFTOVERS, self.workdir,
             MINICLOUD], capture_output=True, text=True, check=True)
        self.assertEqual([service.pid], json.loads(done.stdout))


#: Prints [cell0_rebuild_pending] of nova.conf and of pending.conf.
PENDING_SECTIONS = (
    'import configparser, json, sys; sys.path.insert(0, sys.argv[1]); '
    'import configs; '
    'nova, pending = [configparser.ConfigParser(default_section="-") '
    'for _ in "ab"]; '
    'nova.read_string(configs.nova_conf("/w")); '
    'pending.read_string(configs.pending_conf()); '
    'print(json.dumps([dict(nova["cell0_rebuild_pending"]), '
    'dict(pending["cell0_rebuild_pending"]), configs.PENDING_COPIES if '
    'configs.PENDING else []]))')


class PendingConfigTest(base.BaseTestCase):
    """The waits the minicloud enables, and where its copies elect."""

    def _sections(self, database):
        env = dict(os.environ, MINICLOUD_DATABASE=database)
        done = subprocess.run([sys.executable, '-c', PENDING_SECTIONS,
                               MINICLOUD], capture_output=True, text=True,
                              check=True, env=env)
        return json.loads(done.stdout)

    def test_waits_enabled_with_two_copies_on_redis(self):
        nova, pending, copies = self._sections('mariadb')
        self.assertEqual({'enabled': 'true', 'projects': '*'}, nova)
        self.assertEqual('redis://127.0.0.1:6379',
                         pending['coordination_url'])
        self.assertEqual(['pending-1', 'pending-2'], copies)

    def test_galera_mode_no_waits(self):
        # No redis there, and the upgrade check warns while waits are
        # enabled and no copy dispatches.
        nova, _, copies = self._sections('galera')
        self.assertEqual({'enabled': 'false'}, nova)
        self.assertEqual([], copies)
