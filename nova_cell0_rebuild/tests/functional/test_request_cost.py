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

"""What the filter adds to nova-api requests, counted in SQL statements.

The filter sits in front of every request of a cloud, so its cost is paid
by every user. A statement is the filter's when it is issued from the
filter's code and not from inside Nova's API application, which the filter
calls; statements of Nova's own handling, and of the conductor and
computes, are not counted. A statement issued by the plugin outside any
request (a background thread) is counted separately: there must be none.
"""

import os
import sys
import uuid as uuidlib

import fixtures
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import objects as nova_objects
from nova.tests.functional.api import client as api_client
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_release
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tests.bench import sql as bench_sql
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests import microversions as mv
from nova_cell0_rebuild.tests import statements as sql_counting

_FILTER = os.path.join('nova_cell0_rebuild', 'api', 'filter.py')
_PLUGIN = 'nova_cell0_rebuild' + os.sep
_TESTS = os.path.join('nova_cell0_rebuild', 'tests', '')
_NOVA_API = os.path.join('nova', 'api', 'openstack', '')
_TRANSACTION = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE')


def _issuer(frame):
    """'filter', 'nova', 'background' (plugin code, no request) or None."""
    plugin = False
    while frame is not None:
        name = frame.f_code.co_filename
        if _NOVA_API in name:
            return 'nova'
        if _FILTER in name:
            return 'filter'
        if _PLUGIN in name and _TESTS not in name:
            plugin = True
        frame = frame.f_back
    return 'background' if plugin else None


class _CostTestCase(base.Cell0RebuildTestCase):
    """Records the statements of the filter and of plugin threads."""

    def setUp(self):
        super().setUp()
        self.statements = {'filter': [], 'background': []}

        def record(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith(_TRANSACTION):
                return  # SQLite's explicit BEGIN: a marker, no query
            if sql_counting.is_connection_ping(statement):
                return
            issuer = _issuer(sys._getframe(1))
            if issuer in self.statements:
                self.statements[issuer].append(statement)
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', record)

    def _filter_statements(self, request):
        """The statements the filter issued while *request* ran."""
        before = len(self.statements['filter'])
        request()
        return self.statements['filter'][before:]


class RequestCostTest(_CostTestCase):

    def _active_server(self):
        self._start_compute('host1')
        server = self._build_server(image_uuid=self.image_id,
                                    networks='none')
        return self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE')

    def test_reads_cost_nothing(self):
        buried = self._create_buried_server()
        active = self._active_server()
        for server in (buried, active):
            self.assertEqual([], self._filter_statements(
                lambda: self.api.get_server(server['id'])))
        self.assertEqual([], self._filter_statements(
            lambda: self.api.get_servers()))
        self.assertEqual([], self._filter_statements(
            lambda: self.api.get_servers(detail=False)))
        self.assertEqual([], self.statements['background'])

    def test_delete_of_a_server_in_a_cell_costs_one_lookup(self):
        server = self._active_server()
        statements = self._filter_statements(
            lambda: self.api.delete_server(server['id']))
        self.assertEqual(1, len(statements), statements)
        self.assertTrue(statements[0].lstrip().upper().startswith('SELECT'))
        self._wait_until_deleted(server)
        # An unknown server: the same single look-up, and Nova's 404.
        unknown = '9a1f0c2e-5b7d-4e8a-b3c6-0d2e4f6a8b1c'
        statements = self._filter_statements(lambda: self.assertRaises(
            api_client.OpenStackApiNotFoundException,
            self.api.delete_server, unknown))
        self.assertEqual(1, len(statements), statements)
        self.assertEqual([], self.statements['background'])

    def test_delete_of_a_rebuilt_server(self):
        # Its history still stashed: the same one look-up (the stash table
        # joined in it), then, once Nova deleted it, its write-back.
        stashed = self._create_buried_server()
        written = self._create_buried_server()
        self._start_compute('host1')
        for server in (stashed, written):
            self.assertEqual(202, self._rebuild(server['id']).status)
            self._wait_for_state_change(server, 'ACTIVE')
        # Listing its actions writes the history back: the stash goes.
        self.api.api_get('/servers/%s/os-instance-actions' % written['id'])
        statements = self._filter_statements(
            lambda: self.api.delete_server(written['id']))
        self.assertEqual(1, len(statements), statements)
        self.assertIn(models.ServerHistory.__tablename__, statements[0])
        self.assertTrue(statements[0].lstrip().upper().startswith('SELECT'))

        statements = [bench_sql.compact(bench_sql.normalize(s))
                      for s in self._filter_statements(
                          lambda: self.api.delete_server(stashed['id']))]
        self.assertEqual(
            'SELECT instance_mappings +cell_mappings,build_requests,'
            'cell0_rebuild_server_histories WHERE instance_uuid',
            statements[0])
        # The write-back: the stash, the mapping, the cell's rows.
        self.assertEqual(['SELECT cell0_rebuild_server_histories '
                          'WHERE instance_uuid'], statements[1:2])
        self.assertEqual('DELETE cell0_rebuild_server_histories WHERE id',
                         statements[-1])
        self.assertNotIn('DELETE instance_faults', ' '.join(statements))
        self.assertNotIn('UPDATE instance_id_mappings',
                         ' '.join(statements))
        self.assertEqual([], self.statements['background'])
        self.assertIsNone(objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, stashed['id']))

    def test_actions_on_a_server_in_a_cell(self):
        server = self._active_server()
        # An action that is not a rebuild: nothing.
        self.assertEqual([], self._filter_statements(
            lambda: self.api.post_server_action(server['id'],
                                                {'os-stop': None})))
        self._wait_for_state_change(server, 'SHUTOFF')
        # A rebuild at the plugin's microversion: the mapping, once.
        statements = self._filter_statements(lambda: self._rebuild(
            server['id']))
        self.assertEqual(1, len(statements), statements)

    def test_update_of_a_server_in_a_cell_costs_one_lookup(self):
        # The mapping, once: a server in a cell is never a move's.
        server = self._active_server()
        statements = [bench_sql.compact(bench_sql.normalize(s))
                      for s in self._filter_statements(
                          lambda: self.api.put_server(
                              server['id'], {'server': {'name': 'new'}}))]
        self.assertEqual(1, len(statements), statements)
        self.assertTrue(statements[0].startswith('SELECT instance_mappings'),
                        statements)
        self.assertEqual('new', self.api.get_server(server['id'])['name'])
        self.assertEqual([], self.statements['background'])

    def test_rebuilds_below_the_threshold(self):
        server = self._active_server()
        # From reaper_min_microversion: the mapping, once, to judge whether
        # the caller takes the reaper path (a member does not: Nova's).
        statements = self._filter_statements(lambda: self.assertEqual(
            202, self._rebuild(server['id'], microversion='2.65').status))
        self.assertEqual(1, len(statements), statements)
        self._wait_for_state_change(server, 'ACTIVE')
        # Below it: nothing.
        self.assertEqual([], self._filter_statements(lambda: self.assertEqual(
            202, self._rebuild(server['id'], microversion='2.56').status)))
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual([], self.statements['background'])

    def test_a_single_create_costs_two_writes_and_nothing_after(self):
        statements = self._filter_statements(
            self._create_buried_server)
        self.assertEqual(['INSERT', 'UPDATE'],
                         [s.lstrip().split()[0].upper() for s in statements])
        # The server was buried since: nothing of ours ran meanwhile.
        self.assertEqual([], self.statements['background'])


class MultiCreateCostTest(_CostTestCase):
    """A multi-create's record costs the same in a small and a big cloud.

    "Elsewhere" is another project's 10,000 BuildRequests, 10,000 servers
    in cell0 and in cell1 and 10,000 create records, inserted directly.
    """

    ELSEWHERE = 10000

    def _multi_create(self, count=3):
        body = self._build_server(image_uuid=self.image_id, networks='none')
        body.update(min_count=count, max_count=count)
        self.api.post_server({'server': body})

    def _verbs_and_tables(self, statements):
        return [bench_sql.compact(bench_sql.normalize(s))
                for s in statements]

    def _fill_the_deployment(self):
        project = 'another-project'
        rows = [str(uuidlib.UUID(int=i + 1)) for i in range(self.ELSEWHERE)]
        # One serialized Instance for all: what Nova would deserialize.
        instance = jsonutils.dumps(nova_objects.Instance(
            project_id=project, reservation_id='r-elsewhere',
            user_id='u').obj_to_primitive())
        with api_db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(api_models.BuildRequest.__table__), [
                {'instance_uuid': uuid, 'project_id': project,
                 'instance': instance} for uuid in rows])
        for cell in nova_objects.CellMappingList.get_all(
                self.admin_context):
            with nova_context.target_cell(self.admin_context,
                                          cell) as cctxt:
                engine = main_db_api.get_engine(context=cctxt)
            with engine.begin() as conn:
                conn.execute(sa.insert(main_models.Instance.__table__), [
                    {'uuid': uuid, 'project_id': project, 'deleted': 0,
                     'reservation_id': 'r-%d' % (i // 3),
                     'vm_state': 'error'}
                    for i, uuid in enumerate(rows)])
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(models.CreateRecord.__table__), [
                {'request_id': 'req-%d' % i, 'status': 'accepted',
                 'instance_uuid': uuid, 'reservation_id': 'r-%d' % (i // 3),
                 'project_id': project, 'user_id': 'u',
                 'microversion': '2.1', 'personality_files': 0}
                for i, uuid in enumerate(rows)])

    def _costs(self):
        """Filter statements of a multi-create, a DELETE and a purge."""
        before = {s['id'] for s in self.api.get_servers()}
        create = self._filter_statements(self._multi_create)
        created = [s for s in self.api.get_servers() if s['id'] not in before]
        self.assertEqual(3, len(created))
        for server in created:
            self._wait_for_state_change(server, 'ERROR')
        delete = self._filter_statements(
            lambda: self.api.delete_server(created[0]['id']))
        self._wait_until_deleted(created[0])
        record = objects.CreateRecord.get_for_instance(
            self.admin_context, created[1]['id'],
            reservation_id=self._cell0_instance(
                created[1]['id']).reservation_id)
        # What purge decides for this one record (it pages over all).
        start = len(self.statements['background'])
        verdict, _servers = purge._record_verdict(
            self.admin_context, self._cell0(), record, timeutils.utcnow())
        self.assertEqual(purge.KEEP, verdict)  # two servers still in cell0
        return (self._verbs_and_tables(create),
                self._verbs_and_tables(delete), record,
                self._verbs_and_tables(self.statements['background'][start:]))

    def test_the_same_count_whatever_the_deployment(self):
        small = self._costs()
        self._fill_the_deployment()
        big = self._costs()
        # The record, the project's BuildRequests written since the create
        # started and cell0's servers of the reservation, then the update
        # naming them: no BuildRequest of another project is read, and no
        # real cell is asked.
        self.assertEqual([
            'INSERT cell0_rebuild_create_records',
            'SELECT build_requests WHERE project_id,created_at',
            'SELECT instances WHERE reservation_id,deleted',
            'UPDATE cell0_rebuild_create_records SET instance_uuid,'
            'reservation_id,server_uuids,status,updated_at WHERE id',
        ], small[0])
        self.assertEqual(small[0], big[0])
        # Deleting one of them, and purge's look at their record: the
        # servers named by the record, by uuid (one statement each).
        self.assertEqual(small[1], big[1])
        self.assertEqual(small[3], big[3])
        self.assertEqual(
            ['SELECT instance_mappings +cell_mappings,build_requests '
             'WHERE instance_uuid'], big[3])
        # The record names the three servers, read back by uuid.
        self.assertEqual(3, len(big[2].server_uuids))
        self.assertEqual(3, len(small[2].server_uuids))


#: Nova's legacy quota count of a project's servers in one cell.
_QUOTA_COUNT = 'SELECT instances WHERE deleted,vm_state,project_id,hidden'
#: A rebuild POST's statements in the API database and cell0, at Nova's
#: maximum microversion, on each Nova release (on Nova 34: 54 at 6d4a0eb,
#: 52 once no heartbeat follows a fenced write; 57 in all with one real
#: cell): routing, the server and what the gates read, Nova's quota and
#: service-version checks, the journal, the history, the BuildRequest,
#: mapping and RequestSpec writes, the cell0 deletes, Nova's view. See
#: doc/source/contributor/performance.rst. Nova 29 and 30 read two fewer:
#: their create checks take no minimum compute version, and their view at
#: 2.96 shows no scheduler hints (read from the RequestSpec from 2.100 on).
REBUILD_API_AND_CELL0_STATEMENTS = {
    29: 50, 30: 50, 31: 52, 32: 52, 33: 52, 34: 52}
#: Nova's minimum compute service version, in one cell.
_SERVICE_VERSIONS = 'SELECT services WHERE binary,deleted,forced_down'
#: What Nova's legacy quota reads from nova-api's [database].
_NOVA_MAIN_DATABASE = [
    'SELECT project_user_quotas WHERE deleted,project_id,user_id',
    'SELECT quotas WHERE deleted,project_id',
    'SELECT project_user_quotas WHERE deleted,project_id,user_id']


class RebuildCostTest(_CostTestCase):
    """A rebuild's statements do not grow with the deployment.

    Every statement of the rebuild's API request is counted (ours and
    Nova's, including the view Nova answers with), not those of the
    conductor it casts to. "The deployment" is another project's 10,000
    servers buried in cell0, mapped there, and 100,000 create records,
    inserted directly.
    """

    BURIED = 10000
    RECORDS = 100000

    def setUp(self):
        super().setUp()
        self.request_statements = []
        # The cells' workers of Nova's scatter-gather keep their caller's
        # origin: the conductor's look-ups of the minimum compute version,
        # which may run before the request returns, are not the request's.
        self.useFixture(fixtures.MonkeyPatch(
            'nova.context.scatter_gather_cells',
            bench_sql.propagate_origin(nova_context.scatter_gather_cells)))
        engines = {}
        for cell in nova_objects.CellMappingList.get_all(
                self.admin_context):
            with nova_context.target_cell(self.admin_context,
                                          cell) as cctxt:
                engines[main_db_api.get_engine(context=cctxt)] = cell.name

        def record(conn, cursor, statement, *args):
            if (statement.lstrip().upper().startswith(_TRANSACTION)
                    or sql_counting.is_connection_ping(statement)):
                return
            if bench_sql.origin(sys._getframe(1)) == bench_sql.API:
                self.request_statements.append(
                    (engines.get(conn.engine, 'api'),
                     bench_sql.compact(bench_sql.normalize(statement))))
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', record)

    def _rebuild_statements(self):
        server = self._create_buried_server()
        before = len(self.request_statements)
        response = self._rebuild(server['id'])
        self.assertEqual(202, response.status)
        statements = self.request_statements[before:]
        # Let the conductor bury it again before the next fill or rebuild.
        self._wait_for_state_change(server, 'ERROR')
        return statements

    def _fill_the_deployment(self):
        project = 'another-project'
        uuids = [str(uuidlib.UUID(int=i + 1)) for i in range(self.BURIED)]
        cell0 = self._cell0()
        with nova_context.target_cell(self.admin_context, cell0) as cctxt:
            engine = main_db_api.get_engine(context=cctxt)
        with engine.begin() as conn:
            conn.execute(sa.insert(main_models.Instance.__table__), [
                {'uuid': uuid, 'project_id': project, 'user_id': 'u',
                 'deleted': 0, 'vm_state': 'error', 'reservation_id': 'r-x'}
                for uuid in uuids])
        with api_db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(api_models.InstanceMapping.__table__), [
                {'instance_uuid': uuid, 'cell_id': cell0.id,
                 'project_id': project, 'user_id': 'u',
                 'queued_for_delete': False} for uuid in uuids])
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(models.CreateRecord.__table__), [
                {'request_id': 'req-%d' % i, 'status': 'accepted',
                 'instance_uuid': str(uuidlib.UUID(int=i + 1)),
                 'project_id': project, 'user_id': 'u',
                 'microversion': '2.1', 'personality_files': 0}
                for i in range(self.RECORDS)])

    def test_the_same_statements_whatever_the_deployment(self):
        # Once per process, not per request: Nova's RPC clients read the
        # minimum compute version of every cell on their first cast.
        self._rebuild_statements()
        small = self._rebuild_statements()
        self._fill_the_deployment()
        big = self._rebuild_statements()
        self.assertEqual(small, big)
        # The server's mapping names its cell. A real cell is asked only
        # by the checks Nova's create makes too: its legacy quota count of
        # the project and its minimum compute service version, once per
        # cell and cell0, and the quota limits in the database nova-api is
        # configured with (cell1's, in this harness). The rest is the API
        # database (which holds our tables) and cell0, the same whatever
        # the cells.
        # Nova 30 and older check no minimum compute service version.
        gathered_everywhere = (
            (_QUOTA_COUNT, _SERVICE_VERSIONS)
            if nova_release.checks_take_min_compute() else (_QUOTA_COUNT,))
        for gathered in (_QUOTA_COUNT, _SERVICE_VERSIONS):
            # Asked of every cell at once: under load the harness's cell
            # switching may answer cell0's share from another cell's
            # database, so only their number is certain.
            expected = (self.NUMBER_OF_CELLS + 1
                        if gathered in gathered_everywhere else 0)
            self.assertEqual(expected, sum(
                statement == gathered for _db, statement in big), big)
        in_real_cells = sorted(
            statement for db, statement in big
            if db not in ('api', 'cell0') and
            statement not in gathered_everywhere)
        self.assertEqual(sorted(_NOVA_MAIN_DATABASE), in_real_cells)
        in_real_cells_too = (len(gathered_everywhere) * self.NUMBER_OF_CELLS
                             + len(in_real_cells))
        self.assertEqual(REBUILD_API_AND_CELL0_STATEMENTS[mv.NOVA_MAJOR],
                         len(big) - in_real_cells_too, big)


class RebuildCostOverCellsTest(RebuildCostTest):
    """The same with three real cells."""

    NUMBER_OF_CELLS = 3
