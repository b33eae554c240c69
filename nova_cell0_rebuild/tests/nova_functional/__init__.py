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

"""Nova's own functional tests, run with the cell0_rebuild filter injected.

Nothing here is a test of ours: the modules named in ``nova-slice.txt``
are loaded from the installed Nova and run unchanged, with
:class:`~nova_cell0_rebuild.fixture.Cell0RebuildFixture`
applied each time Nova's ``OSAPIFixture`` starts an API, so that every
request of those tests goes through the filter as in a deployment. A test
that passes in plain Nova and fails here is a behaviour the filter changed.
Run with ``tox -e nova-functional``; Nova's API samples come from its
sdist (``tools/nova_sdist_data.py``), which the wheel lacks.
"""

# As nova/tests/functional/__init__.py does, before anything else.
from nova_cell0_rebuild.adapters import nova_release  # noqa: E402
nova_release.patch_eventlet()

from nova.tests import fixtures as nova_fixtures  # noqa: E402

from nova_cell0_rebuild import fixture  # noqa: E402

_nova_api_setup = nova_fixtures.OSAPIFixture.setUp


def _api_with_the_filter(api_fixture):
    # The filter must be in the paste file before Nova's API loads it,
    # and this fixture has no cleanups yet: set it up on its own and
    # clean it up with the API.
    plugin = fixture.Cell0RebuildFixture()
    plugin.setUp()
    try:
        _nova_api_setup(api_fixture)
    except BaseException:
        plugin.cleanUp()
        raise
    api_fixture.addCleanup(plugin.cleanUp)


def inject_filter():
    """Make every OSAPIFixture of this process serve through the filter."""
    if nova_fixtures.OSAPIFixture.setUp is not _api_with_the_filter:
        nova_fixtures.OSAPIFixture.setUp = _api_with_the_filter
