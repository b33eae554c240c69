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

"""Two rebuilds of one server, through the API, their journals on two
Galera nodes.

The plugin's tables are in a database of their own on a Galera cluster
(``[cell0_rebuild] connection``); each request's journal writes go
through its own node, as with two nova-api behind a multi-writer proxy.
Nova's own databases stay the harness's. One rebuild must answer 202 and
the other Nova's 409, never a 5xx. Without a cluster the test skips (or
fails, with NOVA_CELL0_REBUILD_REQUIRE_DBS): see db/test_galera.py.
NOVA_CELL0_REBUILD_GALERA_API_ROUNDS sets the rounds (default 10).
"""

import collections
import contextlib
import logging
import os
import threading

import eventlet
import fixtures
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova import exception as nova_exception
from nova import objects as nova_objects
from oslo_db.sqlalchemy import enginefacade
from testtools import content

from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional.db import test_galera
from nova_cell0_rebuild.tests.functional import test_move_faults

ROUNDS = int(os.environ.get('NOVA_CELL0_REBUILD_GALERA_API_ROUNDS', '10'))
LOG = logging.getLogger(__name__)


class IsolatedApiTransactions(fixtures.Fixture):
    """One transaction at a time on the harness's API database.

    Nova's harness keeps the API database in memory, on one SQLite
    connection that every greenthread shares. The move's API-database
    transaction waits for the Galera cluster inside it (it stashes the
    server's history in the plugin's tables), which lets the other request
    run; when that one's session ends on the shared connection, its
    rollback undoes the first one's uncommitted writes (the BuildRequest
    and the unmapping), and the move then finds the server mapped to cell0
    again and takes it for deleted. Production's databases give each
    transaction its own connection: here, readers and writers of the API
    database take one lock for their transaction (Nova 34's
    DatabaseWriteLock takes it for writers only). The two requests still
    race, transaction by transaction, and on the Galera journal. The cell
    databases' transactions never wait on the network inside: no lock.
    """

    def _setUp(self):
        lock = threading.RLock()
        original = enginefacade._TransactionContextManager._transaction_scope

        @contextlib.contextmanager
        def isolated(manager, context):
            if manager._root is not api_db_api.context_manager._root:
                with original(manager, context) as resource:
                    yield resource
                return
            with lock:
                with original(manager, context) as resource:
                    yield resource

        self.useFixture(fixtures.MockPatchObject(
            enginefacade._TransactionContextManager, '_transaction_scope',
            isolated))


class RebuildRaceThroughTwoNodesTest(test_move_faults.MoveChecks,
                                     base.Cell0RebuildTestCase):

    def setUp(self):
        if len(test_galera.NODES) < 2:
            self._unavailable('NOVA_CELL0_REBUILD_GALERA names no two '
                              'Galera nodes')
        try:
            self.galera = test_galera.GaleraDatabase()
            self.galera.setUp()
        except Exception as exc:
            self._unavailable('Galera cluster not reachable: %s' % exc)
        self.addCleanup(self.galera.cleanUp)
        self.cell0_rebuild_conf = {'connection': self.galera.facades[
            0].writer.get_engine().url.render_as_string(
                hide_password=False)}
        super().setUp()
        self.useFixture(IsolatedApiTransactions())
        self._local = threading.local()
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.db.api.get_context_manager',
            side_effect=lambda conf=None: getattr(
                self._local, 'facade', self.galera.facades[0])))

    def _unavailable(self, why):
        if test_galera.base.REQUIRE_DBS:
            self.fail(why)
        self.skipTest(why)

    def _rebuild_through(self, node, server_id):
        self._local.facade = self.galera.facades[node]
        resp = self._rebuild(server_id)
        return resp.status, next(iter(resp.body), None) if isinstance(
            resp.body, dict) else None

    def _wait_until_buried(self, server_id, answers):
        """Until the conductor buried the winner's server in cell0 again.
        """
        for _attempt in range(200):
            if self._where(server_id)[:2] == ('cell0', True):
                return
            eventlet.sleep(0.1)
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.fail('server %s not buried again after %s: (mapped, cell0 row, '
                  'build request, cell1 row) %s, journal %s, rows %s' % (
                      server_id, answers, self._where(server_id),
                      journal and {k: getattr(journal, k) for k in (
                          'status', 'step', 'lease_token', 'attempts',
                          'owner', 'last_error')},
                      self._raw_rows(server_id)))

    def _raw_rows(self, server_id):
        """The BuildRequest row whatever the mapping says, and the cell0
        row, deleted or not: what a lost server left behind.
        """
        build_request = self._build_request_row_exists(server_id)
        with nova_context.target_cell(self.admin_context,
                                      self._cell0()) as cctxt:
            cctxt.read_deleted = 'yes'
            try:
                row = nova_objects.Instance.get_by_uuid(cctxt, server_id)
                cell0 = {'deleted': row.deleted, 'vm_state': row.vm_state,
                         'task_state': row.task_state}
            except nova_exception.InstanceNotFound:
                cell0 = None
        return {'build_request': build_request, 'cell0': cell0}

    def test_one_rebuild_wins_the_other_answers_409(self):
        # No room: the winner's server is buried again by the conductor,
        # and the next round rebuilds it again.
        self._set_capacity(False)
        server = self._buried()
        outcomes = collections.Counter()
        for _round in range(ROUNDS):
            threads = [eventlet.spawn(self._rebuild_through, node,
                                      server['id']) for node in (0, 1)]
            answers = tuple(sorted(t.wait() for t in threads))
            outcomes[answers] += 1
            self._wait_until_buried(server['id'], answers)
        report = '\n'.join('%4d  %s' % (n, answers)
                           for answers, n in outcomes.most_common())
        self.addDetail('outcomes', content.text_content(report))
        LOG.warning('%s, %d rounds:\n%s', self.id(), ROUNDS, report)
        for answers in outcomes:
            self.assertEqual(
                ((202, 'server'), (409, 'conflictingRequest')), answers,
                report)
