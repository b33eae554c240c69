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

"""Where --serve keeps its databases, and the configuration it writes."""

import configparser
import os
import sqlite3

import fixtures
import testtools

from nova_cell0_rebuild.demo import state


class StateTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_default_is_a_new_temporary_directory_removed_at_the_end(self):
        sandbox = state.prepare(tmpdir=self.tmp)
        self.assertTrue(sandbox.temporary)
        self.assertEqual(self.tmp, os.path.dirname(sandbox.directory))
        sandbox.create_databases()
        state.write_config(sandbox, '/paste.ini', {})
        sandbox.remove()
        self.assertEqual([], os.listdir(self.tmp))

    def test_a_given_directory_is_created_and_kept(self):
        directory = os.path.join(self.tmp, 'a', 'b')
        sandbox = state.prepare(directory)
        self.assertFalse(sandbox.temporary)
        sandbox.create_databases()
        # The databases are in WAL mode, for the CLIs in other processes.
        with sqlite3.connect(sandbox.path('cell0')) as connection:
            self.assertEqual(('wal',), connection.execute(
                'PRAGMA journal_mode').fetchone())
        connection.close()
        sandbox.remove()
        self.assertEqual([], os.listdir(directory))

    def test_a_directory_with_another_sandbox_is_refused(self):
        state.prepare(self.tmp).create_databases()
        error = self.assertRaises(state.StateDirectoryError,
                                  state.prepare, self.tmp)
        self.assertIn('api.sqlite', str(error))
        self.assertIn('already holds a sandbox', str(error))

    def test_a_directory_that_cannot_be_created_is_refused(self):
        blocker = os.path.join(self.tmp, 'file')
        open(blocker, 'w').close()
        error = self.assertRaises(state.StateDirectoryError, state.prepare,
                                  os.path.join(blocker, 'sub'))
        self.assertIn('cannot create', str(error))

    def test_config_names_the_databases_and_the_plugins_options(self):
        sandbox = state.prepare(self.tmp)
        path = state.write_config(sandbox, '/etc/paste.ini',
                                  {'min_microversion': '2.65'})
        self.assertEqual(os.path.join(self.tmp, state.CONFIG_NAME), path)
        config = configparser.ConfigParser()
        config.read(path)
        self.assertEqual(
            {'api': 'sqlite:///%s/api.sqlite' % self.tmp,
             'cell1': 'sqlite:///%s/cell1.sqlite' % self.tmp,
             'paste': '/etc/paste.ini', 'mv': '2.65',
             'transport': 'fake://'},
            {'api': config['api_database']['connection'],
             'cell1': config['database']['connection'],
             'paste': config['wsgi']['api_paste_config'],
             'mv': config['cell0_rebuild']['min_microversion'],
             'transport': config['DEFAULT']['transport_url']})
