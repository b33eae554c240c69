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

"""Nova 34 in one process, as the functional tests run it, for the bench.

The same fixtures as ``tests/functional/base.py`` (API with the filter,
scheduler, conductor, placement, the Neutron/Glance/Cinder fixtures), plus
fake computes big enough for every server of a run and two more WSGI apps
loaded from paste files: one with the ``cell0_rebuild`` filter and one
without it, called directly with webob as ``test_pass_through`` does.
"""

import sys
import time

import fixtures as fixtures_lib
from nova.api import wsgi as nova_wsgi
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.main import api as main_db_api
from nova import objects as nova_objects
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import fixtures as func_fixtures
from nova.tests.functional import integrated_helpers
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from placement import db_api as placement_db_api
import sqlalchemy as sa
import webob

from nova_cell0_rebuild import fixture
from nova_cell0_rebuild.tests.bench import mariadb
from nova_cell0_rebuild.tests.bench import sql

#: The databases whose statements are counted, in report order.
DATABASES = ('api', 'cell0', 'cell1', 'placement')

_STATES = sa.text(
    'SELECT uuid, vm_state, task_state FROM instances '
    'WHERE deleted = 0 AND uuid IN :uuids').bindparams(
        sa.bindparam('uuids', expanding=True))
_FAULTS = sa.text(
    'SELECT instance_uuid, message FROM instance_faults WHERE id IN ('
    'SELECT max(id) FROM instance_faults WHERE instance_uuid IN :uuids '
    'GROUP BY instance_uuid)').bindparams(
        sa.bindparam('uuids', expanding=True))
_COUNT_LIVE = sa.text('SELECT count(*) FROM instances WHERE deleted = 0')

FLAVOR_ID = '1'

#: The rows of a server buried in cell0, as (table, its uuid column).
_BURIED_CELL0_ROWS = (
    ('instances', 'uuid'), ('instance_extra', 'instance_uuid'),
    ('instance_metadata', 'instance_uuid'),
    ('instance_system_metadata', 'instance_uuid'),
    ('instance_faults', 'instance_uuid'))
_BURIED_API_ROWS = (('instance_mappings', 'instance_uuid'),)


def progress(message, *args):
    """A progress line on the real stderr (the harness captures stdout)."""
    sys.__stderr__.write('[bench %7.1fs] %s\n' % (
        time.monotonic() - _START, message % args if args else message))
    sys.__stderr__.flush()


_START = time.monotonic()


class BenchError(Exception):
    """The harness did not behave: the run cannot be trusted."""


class Harness(integrated_helpers.InstanceHelperMixin, test.TestCase):
    """Runs ``scenario(harness)`` as the body of one Nova functional test.

    :param scenario: callable taking this harness.
    :param computes: how many fake computes to start.
    :param mysql_url: a MariaDB server to put every database on (see
        ``mariadb``); in-memory SQLite, as in Nova's tests, when None.
    """

    def __init__(self, scenario, computes=10, mysql_url=None):
        super().__init__('run_scenario')
        self.scenario = scenario
        self.compute_count = computes
        self.mysql_url = mysql_url

    def setUp(self):
        if self.mysql_url:
            # Before Nova's TestCase.setUp, which makes the databases.
            self.useFixture(mariadb.Databases(self.mysql_url))
        super().setUp()
        # nova.virt.fake.FakeDriver: 1000 vCPUs, 800 GB of RAM per host,
        # where the harness default (SmallFakeDriver) fits 8 tiny servers.
        self.flags(compute_driver='fake.FakeDriver')
        # The default quota (10 instances) would stop the run; limits stay
        # finite so that Nova's and our quota checks still count usage.
        self.flags(instances=1000000, cores=10000000, ram=1000000000,
                   group='quota')
        self.useFixture(nova_fixtures.RealPolicyFixture())
        self.neutron = self.useFixture(nova_fixtures.NeutronFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.useFixture(nova_fixtures.CinderFixture(self))
        self.image_id = self.glance.image1['id']
        self.placement = self.useFixture(func_fixtures.PlacementFixture()).api
        # B6 hands Nova's versioned notifications to the pending service.
        self.notifier = self.useFixture(
            nova_fixtures.NotificationFixture(self))
        self.useFixture(fixture.Cell0RebuildFixture())
        api_fixture = self.useFixture(
            nova_fixtures.OSAPIFixture(api_version='v2.1'))
        self.project_id = api_fixture.api.project_id
        # Scheduler before conductor (see tests/functional/base.py).
        self.start_service('scheduler')
        self.start_service('conductor')
        for index in range(self.compute_count):
            self._start_compute('host%d' % (index + 1))
        self.admin_context = nova_context.get_admin_context()
        self.apps = self._load_apps()
        self.engines = self._engines()
        # Statements of Nova's cross-cell fan-out keep their caller's
        # origin (API request or build) in B4.
        self.useFixture(fixtures_lib.MonkeyPatch(
            'nova.context.scatter_gather_cells',
            sql.propagate_origin(nova_context.scatter_gather_cells)))
        self.counter = sql.StatementCounter(self.engines)
        self.addCleanup(self.counter.remove)

    def run_scenario(self):
        self.scenario(self)

    # -- set-up -------------------------------------------------------------

    def _load_apps(self):
        """{'with': app with the filter, 'without': Nova's own pipeline}."""
        with_filter = fixture.find_paste_config()
        try:
            without_filter = fixture.write_paste_config_without_filter(
                self.useFixture(fixtures_lib.TempDir()).path)
        except RuntimeError as exc:
            raise BenchError(str(exc))
        return {name: nova_wsgi.Loader(path).load_app('osapi_compute')
                for name, path in (('with', with_filter),
                                   ('without', without_filter))}

    def _engines(self):
        engines = {'api': api_db_api.get_engine()}
        for name in ('cell0', 'cell1'):
            with nova_context.target_cell(
                    self.admin_context, self.cell_mappings[name]) as cctxt:
                engines[name] = main_db_api.get_engine(context=cctxt)
        engines['placement'] = placement_db_api.get_placement_engine()
        if len({id(engine) for engine in engines.values()}) != len(engines):
            raise BenchError('two databases share one engine: %s' % engines)
        return engines

    # -- API calls -----------------------------------------------------------

    def request(self, method, path, body=None, version='latest'):
        """A webob request as the user 'fake' (roles reader, member)."""
        headers = {'X-Auth-User': 'fake',
                   'X-Auth-Project-Id': self.project_id,
                   'X-Roles': 'reader,member',
                   'Accept': 'application/json',
                   'OpenStack-API-Version': 'compute %s' % version}
        req = webob.Request.blank('/v2.1' + path, method=method,
                                  headers=headers)
        if body is not None:
            req.body = jsonutils.dump_as_bytes(body)
            req.content_type = 'application/json'
        return req

    def call(self, app, req, expect):
        resp = req.get_response(self.apps[app])
        if resp.status_int != expect:
            raise BenchError('%s %s through %s answered %s, not %s: %s' % (
                req.method, req.path_info, app, resp.status, expect,
                resp.text[:500]))
        return resp

    def server_body(self, name='bench', flavor=FLAVOR_ID):
        """The one server shape of the bench, for creates and burials
        (B6 gives its own flavors).
        """
        return {'server': {
            'name': name,
            'imageRef': self.image_id,
            'flavorRef': flavor,
            'networks': [{'uuid': self.neutron.network_1['id']}],
            'metadata': {'k1': 'v1', 'k2': 'v2'},
            'tags': ['t1', 't2'],
            'block_device_mapping_v2': [{
                'boot_index': 0, 'uuid': self.image_id,
                'source_type': 'image', 'destination_type': 'local'}],
        }}

    def create_request(self, flavor=FLAVOR_ID):
        return self.request('POST', '/servers',
                            self.server_body(flavor=flavor))

    def rebuild_request(self, server_id):
        return self.request('POST', '/servers/%s/action' % server_id,
                            {'rebuild': {'imageRef': self.image_id}})

    def delete_request(self, server_id):
        return self.request('DELETE', '/servers/%s' % server_id)

    # -- waiting -------------------------------------------------------------

    def states(self, cell, uuids):
        """{uuid: (vm_state, task_state)} of live instances in a cell."""
        with sql.muted():
            with self.engines[cell].connect() as conn:
                rows = conn.execute(_STATES, {'uuids': list(uuids)})
                return {row.uuid: (row.vm_state, row.task_state)
                        for row in rows}

    def live_instances(self, cell):
        with sql.muted():
            with self.engines[cell].connect() as conn:
                return conn.execute(_COUNT_LIVE).scalar()

    def wait_for(self, cell, uuids, vm_state, timeout=60.0, interval=0.02,
                 partial=False):
        """Poll the cell database until every server has *vm_state*.

        Polls every *interval* seconds, with no API call in the window.

        :returns: {uuid: time.perf_counter() when first seen so}.
        :raises: BenchError on timeout, unless *partial*.
        """
        pending = set(uuids)
        reached = {}
        deadline = time.monotonic() + timeout
        while pending:
            for uuid, (vm, task) in self.states(cell, pending).items():
                if vm == vm_state and task is None:
                    reached[uuid] = time.perf_counter()
                    pending.discard(uuid)
            if not pending:
                break
            if time.monotonic() > deadline:
                if partial:
                    break
                raise BenchError('%d of %d servers did not reach %s in %s '
                                 'within %ss: %s' % (
                                     len(pending), len(uuids), vm_state,
                                     cell, timeout, sorted(pending)[:5]))
            time.sleep(interval)
        return reached

    def settle(self, quiet=0.15, timeout=60.0):
        """Wait for every database to go quiet."""
        deadline = time.monotonic() + timeout
        while (self.counter.quiet_for() < quiet and
               time.monotonic() < deadline):
            time.sleep(0.02)

    # -- servers in cell0 ----------------------------------------------------

    def set_computes_enabled(self, enabled):
        """Enable or disable every compute service (ComputeFilter)."""
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            for service in nova_objects.ServiceList.get_by_binary(
                    cctxt, 'nova-compute', include_disabled=True):
                service.disabled = not enabled
                service.disabled_reason = (
                    None if enabled else 'bench: bury servers')
                service.save()

    def bury(self, app, count, timeout=300.0, chunk=25, flavor=FLAVOR_ID):
        """Create *count* servers through *app* while no compute can take
        them: Nova's conductor buries each in cell0 (NoValidHost).

        Creates go in chunks: under heavy concurrency the harness's cell
        database switching can fail a burial with a RuntimeError fault
        instead of NoValidHost; such servers are deleted and replaced.

        :returns: their uuids.
        """
        buried = []
        self.set_computes_enabled(False)
        try:
            while len(buried) < count:
                uuids = []
                for _ in range(min(chunk, count - len(buried))):
                    resp = self.call(app, self.create_request(flavor), 202)
                    uuids.append(resp.json['server']['id'])
                self.wait_for('cell0', uuids, 'error', timeout=timeout)
                faults = self.latest_faults('cell0', uuids)
                for uuid in uuids:
                    if faults.get(uuid, '').startswith('No valid host'):
                        buried.append(uuid)
                    else:
                        progress('burial of %s failed with %r; replaced',
                                 uuid, faults.get(uuid))
                        self.call(app, self.delete_request(uuid), 204)
        finally:
            self.set_computes_enabled(True)
        self.settle()
        return buried

    def latest_faults(self, cell, uuids):
        """{uuid: message of its latest fault} in a cell."""
        with sql.muted():
            with self.engines[cell].connect() as conn:
                rows = conn.execute(_FAULTS, {'uuids': list(uuids)})
                return {row.instance_uuid: row.message or ''
                        for row in rows}

    def insert_buried(self, count):
        """Insert *count* servers buried in cell0, as other users' failed
        creates: cheap stand-ins, no API call, no RequestSpec, no create
        record.

        One is made with Nova objects (an Instance in cell0, vm_state
        error, the bench's flavor and image, metadata, system_metadata;
        its NoValidHost fault; an InstanceMapping to cell0); the others
        are copies of its rows under new uuids, inserted in bulk, so that
        10,000 take seconds, not minutes, on MariaDB too.
        """
        template = self._buried_server()
        uuids = [uuidutils.generate_uuid() for _ in range(count - 1)]
        if uuids:
            with sql.muted():
                self._copy_rows(self.engines['cell0'], _BURIED_CELL0_ROWS,
                                template, uuids)
                self._copy_rows(self.engines['api'], _BURIED_API_ROWS,
                                template, uuids)
        return [template] + uuids

    @staticmethod
    def _copy_rows(engine, tables, template, uuids):
        """Copy *template*'s rows of *tables* for each of *uuids*.

        :param tables: (table, its uuid column) pairs; the copies get new
            integer ids from the database.
        """
        metadata = sa.MetaData()
        with engine.begin() as conn:
            for name, column in tables:
                table = sa.Table(name, metadata, autoload_with=conn)
                rows = [dict(row._mapping) for row in conn.execute(
                    sa.select(table).where(table.c[column] == template))]
                copies = []
                for uuid in uuids:
                    for row in rows:
                        copy = dict(row, **{column: uuid})
                        copy.pop('id', None)
                        copies.append(copy)
                for first in range(0, len(copies), 1000):
                    conn.execute(sa.insert(table),
                                 copies[first:first + 1000])

    def _buried_server(self):
        flavor = nova_objects.Flavor.get_by_flavor_id(self.admin_context,
                                                      FLAVOR_ID)
        cell0 = self.cell_mappings['cell0']
        uuid = uuidutils.generate_uuid()
        with nova_context.target_cell(self.admin_context, cell0) as cctxt:
            instance = nova_objects.Instance(
                context=cctxt, uuid=uuid, project_id=self.project_id,
                user_id='fake', vm_state='error', task_state=None,
                power_state=0, flavor=flavor,
                instance_type_id=flavor.id, memory_mb=flavor.memory_mb,
                vcpus=flavor.vcpus, root_gb=flavor.root_gb,
                ephemeral_gb=flavor.ephemeral_gb,
                image_ref=self.image_id, display_name='buried',
                hostname='buried', reservation_id='r-bench',
                launch_index=0, metadata={'k1': 'v1'},
                system_metadata={'image_base_image_ref': self.image_id},
                availability_zone=None)
            instance.create()
            nova_objects.InstanceFault(
                context=cctxt, instance_uuid=uuid, code=500,
                message='No valid host was found. ', details='',
                host=None).create()
        nova_objects.InstanceMapping(
            context=self.admin_context, instance_uuid=uuid,
            project_id=self.project_id, user_id='fake',
            cell_mapping=cell0, queued_for_delete=False).create()
        return uuid
