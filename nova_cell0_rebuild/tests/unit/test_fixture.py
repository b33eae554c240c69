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

"""The public test fixture's path: public, and the old one still works."""

import json
import subprocess
import sys

import testtools

# In a fresh interpreter: what importing the public module brings in, then
# whether the old path gives the very same objects. Importing the old path
# patches eventlet (tests/functional/__init__.py), so not in this process.
_PROBE = """
import json, sys
from nova_cell0_rebuild.fixture import Cell0RebuildFixture
import nova_cell0_rebuild.fixture as public
ours = sorted(name for name in sys.modules
              if name.startswith('nova_cell0_rebuild.tests'))
from nova_cell0_rebuild.tests.functional import fixtures as old
print(json.dumps({
    'test_modules': ours,
    'public_name': Cell0RebuildFixture.__module__,
    'same': {name: getattr(old, name) is getattr(public, name)
             for name in ('Cell0RebuildFixture', 'find_paste_config',
                          'write_paste_config_without_filter',
                          'PASTE_FILE')},
}))
"""


class PublicFixturePathTest(testtools.TestCase):

    def test_public_path_and_old_path(self):
        probe = subprocess.run([sys.executable, '-c', _PROBE],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(0, probe.returncode, probe.stderr)
        seen = json.loads(probe.stdout.splitlines()[-1])
        # Importable without the tests package, as oslo's fixtures are.
        self.assertEqual([], seen['test_modules'])
        self.assertEqual('nova_cell0_rebuild.fixture', seen['public_name'])
        # Downstream tests that import the old path get the same objects.
        self.assertEqual({'Cell0RebuildFixture': True,
                          'find_paste_config': True,
                          'write_paste_config_without_filter': True,
                          'PASTE_FILE': True}, seen['same'])
