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

"""Nova's cell databases in SQLite files, for a sandbox other processes read.

Nova's harness (``nova.test.TestCase._setup_cells``) gives cell0 and cell1
in-memory databases and names them in their CellMappings by an identifier,
not a URL: nothing outside the process can open them. Here each
CellMapping's ``database_connection`` is the URL of a file, as in a
deployment, so ``nova-cell0-rebuild-manage`` finds the cells through the
API database as it does in production; the harness's ``CellDatabases``
still switches the process's connections between cells, keyed by those
URLs.

Nova 34's harness can put cells in files itself, but only in threading
mode, which the demo does not run; Nova 29 cannot. So the cells' context
managers are made here, with the same calls on both.
"""

import fixtures
from nova.db.main import api as main_db_api
from nova.db import migration
from nova import objects
from nova.tests import fixtures as nova_fixtures


class FileCellDatabases(nova_fixtures.CellDatabases):
    """CellDatabases whose databases are the files their URLs name.

    :meth:`add_cell_database` takes the URL (the CellMapping's
    ``database_connection``), opens a context manager on it, and creates
    Nova's main schema there with Nova's migrations.
    """

    def add_cell_database(self, connection_str, default=False):
        # Called before this fixture's setUp patches create_context_manager.
        ctxt_mgr = main_db_api.create_context_manager(
            connection=connection_str)
        self._ctxt_mgrs[connection_str] = ctxt_mgr
        # As the harness does: the first access at service start is local
        # and must find a compute cell; the default cell is cell1.
        self._last_ctxt_mgr = ctxt_mgr
        if self._default_ctxt_mgr is None or default:
            self._default_ctxt_mgr = ctxt_mgr
        with fixtures.MonkeyPatch('nova.db.main.api.get_context_manager',
                                  lambda context: ctxt_mgr):
            migration.db_sync(database='main')
        ctxt_mgr.writer.get_engine().dispose()


def setup_cells(test_case, state):
    """What ``TestCase._setup_cells`` does, with cells in *state*'s files.

    :param test_case: the ``nova.test.TestCase`` being set up; its
        ``cell_mappings`` are filled as the harness fills them.
    :param state: a :class:`.state.SandboxState` whose files exist.
    """
    from nova import context
    celldbs = FileCellDatabases()
    ctxt = context.get_context()
    for name, uuid in (('cell0', objects.CellMapping.CELL0_UUID),
                       ('cell1', None)):
        url = state.url(name)
        cell = objects.CellMapping(
            context=ctxt, uuid=uuid or _cell1_uuid(), name=name,
            transport_url='fake://nowhere/', database_connection=url)
        cell.create()
        test_case.cell_mappings[name] = cell
        celldbs.add_cell_database(url, default=(name == 'cell1'))
    test_case.useFixture(celldbs)


def _cell1_uuid():
    # The harness's own cell1 UUID, which its helpers may expect.
    from oslo_utils.fixture import uuidsentinel
    return uuidsentinel.cell1
