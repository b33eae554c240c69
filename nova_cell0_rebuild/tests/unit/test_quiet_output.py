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

import io

import subunit
import testtools
from testtools import content

from nova_cell0_rebuild.tests import quiet_output


def _verbose_failure():
    """A test that fails with a log longer than subunit carries at once.

    Made here, not at module level, so the runner does not collect it.
    """
    class Verbose(quiet_output.CappedDetails, testtools.TestCase):
        def test_fails_loudly(self):
            self.addDetail('pythonlogging', content.text_content(
                'head line\n' + 'x' * (5 * 1024 * 1024) + '\ntail line'))
            self.fail('on purpose')
    return Verbose('test_fails_loudly')


class CappedDetailsTest(testtools.TestCase):

    def test_a_long_failure_still_reaches_the_stream(self):
        stream = io.BytesIO()
        result = subunit.StreamResultToBytes(stream)
        result.startTestRun()
        _verbose_failure().run(
            testtools.ExtendedToStreamDecorator(result))
        result.stopTestRun()
        # Without the cap: ValueError('Length too long') from subunit.
        self.assertLess(len(stream.getvalue()), 2 * 1024 * 1024)
        self.assertIn(b'head line', stream.getvalue())
        self.assertIn(b'tail line', stream.getvalue())
        self.assertIn(b'bytes left out', stream.getvalue())

    def test_a_short_detail_is_left_as_it_is(self):
        detail = content.text_content('short')
        self.assertIs(detail, quiet_output.capped(detail))
