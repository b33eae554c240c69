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

"""Public test fixture: enable nova-cell0-rebuild in Nova's harness.

Downstream Nova deployments use :class:`Cell0RebuildFixture` in their own
functional tests, so its name, its arguments and this module's path are a
stable contract, as ``oslo_config.fixture`` and ``oslo_policy.fixture`` are
for those libraries. It imports Nova's test fixtures (``nova.tests``, shipped
in the nova package) and nothing of this project's tests; the old path,
``nova_cell0_rebuild.tests.functional.fixtures``, still gives the same names.
"""

import os
import sys

import fixtures
from nova.tests import fixtures as nova_fixtures
from oslo_config import cfg

import nova_cell0_rebuild
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects

CONF = cfg.CONF

PASTE_FILE = os.path.join('etc', 'nova-cell0-rebuild', 'api-paste.ini')


def find_paste_config():
    """Return the path of the api-paste.ini that carries the filter.

    Looked up in the source tree first (editable installs, tox), then where
    pip installs the package's data files.
    """
    source_tree = os.path.dirname(
        os.path.dirname(os.path.abspath(nova_cell0_rebuild.__file__)))
    for base in (source_tree, sys.prefix):
        path = os.path.join(base, PASTE_FILE)
        if os.path.exists(path):
            return path
    raise RuntimeError('%s was found neither in %s nor in %s'
                       % (PASTE_FILE, source_tree, sys.prefix))


def write_paste_config_without_filter(directory):
    """Write our api-paste.ini without the filter: Nova's own pipeline.

    For tests and benchmarks that compare answers with and without the
    filter in one process. :returns: the path written.
    :raises: RuntimeError if the filter could not be taken out.
    """
    with open(find_paste_config()) as paste:
        text = paste.read()
    stripped = text.replace(' cell0_rebuild ', ' ')
    if stripped == text or 'cell0_rebuild osapi' in stripped:
        raise RuntimeError('could not remove cell0_rebuild from %s'
                           % find_paste_config())
    path = os.path.join(directory, 'api-paste.ini')
    with open(path, 'w') as paste:
        paste.write(stripped)
    return path


class Cell0RebuildFixture(fixtures.Fixture):
    """Put the cell0_rebuild filter into the API of a Nova functional test.

    Use it in a ``nova.test.TestCase`` *before* ``OSAPIFixture`` starts:
    it points ``[wsgi] api_paste_config`` at a paste file with the filter
    after ``keystonecontext`` in every v2.1 pipeline, applies the given
    ``[cell0_rebuild]`` overrides, and creates the plugin's tables in the
    test's API database (or in ``connection`` when one is given).

    :param conf_overrides: ``[cell0_rebuild]`` options, e.g.
        ``Cell0RebuildFixture(min_microversion='2.65')``.
    """

    def __init__(self, **conf_overrides):
        super().__init__()
        self.conf_overrides = conf_overrides

    def _setUp(self):
        plugin_conf.register_opts(CONF)
        objects.register_all()
        self.useFixture(nova_fixtures.ConfPatcher(
            api_paste_config=find_paste_config(), group='wsgi'))
        if self.conf_overrides:
            self.useFixture(nova_fixtures.ConfPatcher(
                group='cell0_rebuild', **self.conf_overrides))
        migration.db_sync(db_api.get_engine())
