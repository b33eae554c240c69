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

"""Benchmarks of nova-cell0-rebuild on Nova's in-process harness.

Run with ``tox -e bench`` or ``python -m nova_cell0_rebuild.tests.bench``;
see doc/source/contributor/performance.rst. Nothing here is a test: no
module is named ``test_*`` and stestr never collects this package.
"""

import os

# Like the functional tests: eventlet mode, decided before Nova is imported.
os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', 'False')
os.environ.setdefault('NOVA_RAISE_ON_GREENLET_LEAK', 'True')
# One harness test runs the whole bench (well under 15 minutes).
os.environ.setdefault('OS_TEST_TIMEOUT', '1800')

from nova_cell0_rebuild.adapters import nova_release  # noqa: E402
nova_release.patch_eventlet()
