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

"""Load the slice of Nova's functional tests named in nova-slice.txt."""

import os
import unittest

from nova_cell0_rebuild.tests import nova_functional

SLICE_FILE = os.path.join(os.path.dirname(__file__), 'nova-slice.txt')


def slice_names():
    """The Nova test modules and classes of the slice, one a line; a line
    starting with ``-`` names a class left out of a module above.
    """
    with open(SLICE_FILE) as slice_file:
        return [line.split('#', 1)[0].strip() for line in slice_file
                if line.split('#', 1)[0].strip()]


def _tests(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _tests(test)
        else:
            yield test


def load_tests(loader, standard_tests, pattern):
    nova_functional.inject_filter()
    names = slice_names()
    left_out = tuple(name[1:] + '.' for name in names
                     if name.startswith('-'))
    for name in names:
        if name.startswith('-'):
            continue
        standard_tests.addTests(
            test for test in _tests(loader.loadTestsFromName(name))
            if not test.id().startswith(left_out))
    return standard_tests
