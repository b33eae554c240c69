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

"""Test output that shows a failure, not the libraries' noise.

A run used to print every DeprecationWarning of eventlet, oslo.*, webob and
SQLAlchemy (tox turns them on, and Nova's test fixture turns them on again
for each test), and the INFO lines Nova and oslo.db log outside any test's
log capture (at import, in a test's clean-up, while oslo.db provisions a
MySQL or PostgreSQL database): a failure drowned in them. Here:

* a test's details (its captured log) are cut to their head and tail
  past 1 MiB, so that one verbose failure cannot break the run's stream;
* a DeprecationWarning is shown only when raised from our package
  (``nova_cell0_rebuild``), which is ours to act on; the others are
  ignored;
* what is logged outside a test shows from WARNING up; a test's own log is
  still captured and shown when it fails.

``OS_DEBUG`` (any true value or level name; tox passes it through) turns
all of this off and brings everything back.
"""

import logging
import os
import warnings

from testtools import content

#: Where a DeprecationWarning still shows: raised from our package.
OUR_MODULES = r'nova_cell0_rebuild(\.|$)'

_FALSE = ('', '0', 'false', 'no', 'off')


def debugging():
    """Whether OS_DEBUG asks for everything."""
    return os.environ.get('OS_DEBUG', '').strip().lower() not in _FALSE


def ignore_third_party_deprecations():
    """Ignore DeprecationWarnings not raised from our package.

    Filters are prepended: call it again after anything that installs its
    own (Nova's WarningsFixture does, in each test's set-up).
    """
    if debugging():
        return
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    warnings.filterwarnings('default', category=DeprecationWarning,
                            module=OUR_MODULES)
    # eventlet's own, on import: a plain Warning, not a DeprecationWarning.
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')


def quiet_between_tests():
    """Show WARNING and up of what is logged outside a test's capture.

    Acts on the handlers the root logger has now: call it once Nova's test
    module set up logging (``nova.test`` calls oslo.log's ``setup``).
    """
    if debugging():
        return
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)


def quiet_at_import():
    """What the test package does first, before Nova or eventlet load."""
    if debugging():
        return
    ignore_third_party_deprecations()
    # Nova 34 warns, when the functional tests patch eventlet, that its
    # eventlet mode is deprecated: once per process, outside any test.
    logging.getLogger('nova.monkey_patch').setLevel(logging.ERROR)


#: The most of one detail (a test's captured log, say) a test reports.
#: subunit v2 refuses a packet over 4 MiB: a failing test whose log was
#: longer (a fuzz test's thousand requests, each logged) made stestr stop
#: storing the run, and the whole run's results were lost with it.
MAX_DETAIL_BYTES = 1024 * 1024
_HEAD_BYTES = MAX_DETAIL_BYTES // 4


def capped(detail):
    """*detail* (testtools content) cut to its head and tail when long."""
    data = b''.join(detail.iter_bytes())
    if len(data) <= MAX_DETAIL_BYTES:
        return detail
    tail = MAX_DETAIL_BYTES - _HEAD_BYTES
    marker = ('\n[... %d bytes left out: the test output is longer than '
              '%d bytes ...]\n' % (len(data) - MAX_DETAIL_BYTES,
                                   MAX_DETAIL_BYTES)).encode()
    cut = data[:_HEAD_BYTES] + marker + data[-tail:]
    return content.Content(detail.content_type, lambda: [cut])


class CappedDetails(object):
    """A test case mixin: every detail it reports at most 1 MiB."""

    def getDetails(self):
        return {name: capped(detail)
                for name, detail in super().getDetails().items()}
