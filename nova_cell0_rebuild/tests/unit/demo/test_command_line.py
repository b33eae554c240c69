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

"""The demo's command line, checked before Nova is imported."""

import testtools

from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.demo import command_line


class CommandLineTest(testtools.TestCase):

    def test_lowest_min_microversion_is_the_plugins(self):
        self.assertEqual(microversion_settings.LOWEST_MIN_MICROVERSION,
                         command_line.LOWEST_MIN_MICROVERSION)

    def test_min_microversion(self):
        self.assertEqual('2.65', command_line.parse_args(
            ['--min-microversion', '2.65']).min_microversion)
        self.assertEqual('2.57', command_line.parse_args(
            ['--min-microversion', '2.57']).min_microversion)
        self.assertIsNone(command_line.parse_args([]).min_microversion)

    def test_serve(self):
        args = command_line.parse_args(['--serve', '--serve-seconds', '3'])
        self.assertEqual((('127.0.0.1', 8774), 3.0),
                         (args.serve, args.serve_seconds))

    def test_serve_seconds_must_be_positive(self):
        for value in ('-1', '0', 'nan', 'inf', 'soon'):
            # argparse prints the usage and the error, and exits with 2.
            error = self.assertRaises(
                SystemExit, command_line.parse_args,
                ['--serve', '--serve-seconds', value])
            self.assertEqual(2, error.code, value)

    def test_state_dir_needs_serve(self):
        args = command_line.parse_args(['--serve', '--state-dir', '/tmp/x'])
        self.assertEqual('/tmp/x', args.state_dir)
        self.assertIsNone(command_line.parse_args(['--serve']).state_dir)
        error = self.assertRaises(SystemExit, command_line.parse_args,
                                  ['--state-dir', '/tmp/x'])
        self.assertEqual(2, error.code)
