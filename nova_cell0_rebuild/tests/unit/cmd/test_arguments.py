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

"""The argument types of nova-cell0-rebuild-manage."""

import argparse

import testtools

from nova_cell0_rebuild.cmd import arguments

SERVER = '8c2f0a4e-3b1d-4f5a-9e6c-7d8b9a0c1e2f'


class ArgumentTypesTest(testtools.TestCase):

    def _refused(self, type_, value, says):
        error = self.assertRaises(argparse.ArgumentTypeError, type_, value)
        self.assertEqual('%r is not %s' % (value, says), str(error))

    def test_positive_int(self):
        self.assertEqual(1, arguments.positive_int('1'))
        self.assertEqual(50, arguments.positive_int(' 50 '))
        for value in ('0', '-1'):
            self._refused(arguments.positive_int, value,
                          'a positive integer (1 or more)')
        for value in ('1.5', 'ten', ''):
            self._refused(arguments.positive_int, value, 'an integer')

    def test_non_negative_int(self):
        self.assertEqual(0, arguments.non_negative_int('0'))
        self.assertEqual(3600, arguments.non_negative_int('3600'))
        self._refused(arguments.non_negative_int, '-1',
                      'a non-negative integer (0 or more)')
        self._refused(arguments.non_negative_int, '1h', 'an integer')

    def test_server_uuid(self):
        self.assertEqual(SERVER, arguments.server_uuid(SERVER))
        # Nova's form, whatever form it was given in.
        self.assertEqual(SERVER, arguments.server_uuid(SERVER.upper()))
        self.assertEqual(SERVER, arguments.server_uuid(
            SERVER.replace('-', '')))
        for value in ('not-a-uuid', SERVER[:-1], ''):
            self._refused(arguments.server_uuid, value, 'a server UUID')
