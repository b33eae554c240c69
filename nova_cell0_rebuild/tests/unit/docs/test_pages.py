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

"""What the operator's pages show, against the code and setup.cfg."""

import configparser
import os
import re

import testtools

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.tests.unit.docs import test_client_caps

_SOURCE = test_client_caps._SOURCE


class PagesTest(testtools.TestCase):

    def _read(self, *path):
        full = os.path.join(_SOURCE, *path)
        if not os.path.exists(full):
            self.skipTest('not a source tree: %s' % full)
        with open(full) as page:
            return page.read()

    def test_upgrade_check_shows_the_head_revision(self):
        page = self._read('doc', 'source', 'admin', 'upgrade-check.rst')
        shown = re.findall(r'At revision ([0-9a-f]+)\.', page)
        self.assertEqual([migration.head_version()], shown)

    def test_the_clients_extra_installs_the_quickstarts_clients(self):
        setup = configparser.ConfigParser()
        setup.read_string(self._read('setup.cfg'))
        clients = {re.split(r'[<>=!]', line.strip())[0]
                   for line in setup['extras']['clients'].splitlines()
                   if line.strip()}
        self.assertEqual({'python-openstackclient', 'python-novaclient',
                          'openstacksdk'}, clients)
        page = self._read('doc', 'source', 'quickstart.rst')
        self.assertIn("$ pip install -c upper-constraints.txt "
                      "'.[demo,clients]'", page)

    def test_the_first_release_is_declared_for_pbr(self):
        setup = configparser.ConfigParser()
        setup.read_string(self._read('setup.cfg'))
        self.assertRegex(setup['metadata']['version'], r'^\d+\.\d+\.\d+$')

    def test_quickstart_creates_with_files_with_the_nova_cli_at_2_1(self):
        page = re.sub(r'\\\n\s*', '', self._read('doc', 'source',
                                                 'quickstart.rst'))
        boots = [line for line in page.splitlines()
                 if line.strip().startswith('$ nova ') and ' boot ' in line]
        self.assertEqual(1, len(boots), boots)
        self.assertIn('$ nova ', boots[0])
        self.assertIn('--os-compute-api-version 2.1 ', boots[0])
        self.assertIn('--file /etc/motd=motd', boots[0])
