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

"""Base class of the functional tests: real Nova 34 in one process."""

import datetime

import fixtures as fixtures_lib
from nova.compute import vm_states
from nova.conductor import api as conductor_api
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova import policy as nova_policy
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client
from nova.tests.functional import fixtures as func_fixtures
from nova.tests.functional import integrated_helpers
from nova import utils
from oslo_config import cfg
from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import fixture
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests import quiet_output

# nova.test set up oslo.log on import; a test's log is captured per test.
quiet_output.quiet_between_tests()


class _WarningsFixture(nova_fixtures.WarningsFixture):
    """Nova's warning filters, then ours (Nova's turn every deprecation on).
    """

    def setUp(self):
        super().setUp()
        quiet_output.ignore_third_party_deprecations()


class Cell0RebuildTestCase(quiet_output.CappedDetails,
                           integrated_helpers.InstanceHelperMixin,
                           test.TestCase):
    """Nova's API (with the filter), scheduler and conductor; no compute.

    With no compute service every create fails to schedule and Nova buries
    the server in cell0. Tests start computes with ``_start_compute``.
    """

    #: ``[cell0_rebuild]`` overrides handed to the public fixture.
    cell0_rebuild_conf = {}
    #: Whether the filter is in the API pipeline at all.
    with_filter = True

    def setUp(self):
        # nova.test.TestCase installs nova_fixtures.WarningsFixture first.
        self.useFixture(fixtures_lib.MonkeyPatch(
            'nova.tests.fixtures.WarningsFixture', _WarningsFixture))
        super().setUp()
        self.policy = self.useFixture(nova_fixtures.RealPolicyFixture())
        self.neutron = self.useFixture(nova_fixtures.NeutronFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        self.image_id = self.glance.image1['id']
        self.placement = self.useFixture(
            func_fixtures.PlacementFixture()).api
        self.notifier = self.useFixture(
            nova_fixtures.NotificationFixture(self))
        if self.with_filter:
            self.useFixture(
                fixture.Cell0RebuildFixture(**self.cell0_rebuild_conf))
        api_fixture = self.useFixture(
            nova_fixtures.OSAPIFixture(api_version='v2.1'))
        self.api = api_fixture.api
        self.admin_api = api_fixture.admin_api
        self.api.microversion = 'latest'
        self.admin_api.microversion = 'latest'
        # Scheduler before conductor: services stop in reverse order, and a
        # build in flight must not outlive the conductor.
        self.start_service('scheduler')
        self.start_service('conductor')
        self.admin_context = nova_context.get_admin_context()

    def _enforce_new_policy_defaults(self):
        """Check policies with Nova's new defaults, as clouds do.

        The placement fixture turns oslo.policy's enforce_new_defaults off
        on options it shares with Nova, so that a reader could rebuild;
        readers, members and reapers are only told apart with it on.
        """
        self.flags(enforce_new_defaults=True, group='oslo_policy')
        nova_policy.reset()
        nova_policy.init()

    def _client(self, user, project, roles):
        """An API client for *user* of *project* with Keystone's *roles*."""
        client = api_client.TestOpenStackClient(
            user, self.api.base_url.rsplit('/', 1)[0] + '/v2.1',
            project_id=project, roles=roles)
        client.microversion = 'latest'
        return client

    def _cell0_instance(self, server_id):
        """The server's instance row in cell0, with system_metadata."""
        cell0 = nova_objects.CellMapping.get_by_uuid(
            self.admin_context, nova_objects.CellMapping.CELL0_UUID)
        with nova_context.target_cell(self.admin_context, cell0) as cctxt:
            return nova_objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['system_metadata'])

    def _build_request_row_exists(self, server_id):
        """Whether the server has a BuildRequest row, whatever its mapping
        says.
        """
        try:
            nova_objects.BuildRequest.get_by_instance_uuid(
                self.admin_context, server_id)
        except nova_exception.BuildRequestNotFound:
            return False
        return True

    def _mapped_cell_uuid(self, server_id):
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            self.admin_context, server_id)
        return mapping.cell_mapping.uuid if mapping.cell_mapping else None

    def _cell0(self):
        return nova_objects.CellMapping.get_by_uuid(
            self.admin_context, nova_objects.CellMapping.CELL0_UUID)

    def _cell0_rows(self, server_id):
        """How many rows of each cell0 table still belong to the server."""
        with nova_context.target_cell(self.admin_context,
                                      self._cell0()) as cctxt:
            engine = main_db_api.get_engine(context=cctxt)
        counts = {}
        with engine.connect() as conn:
            for table in sa.inspect(engine).get_table_names():
                columns = {c['name'] for c in
                           sa.inspect(engine).get_columns(table)}
                for column in ('instance_uuid', 'uuid', 'resource_id'):
                    if column in columns and (column != 'uuid' or table in (
                            'instances', 'instance_id_mappings')):
                        count = conn.execute(sa.text(
                            'SELECT COUNT(*) FROM %s WHERE %s = :uuid'
                            % (table, column)), {'uuid': server_id}).scalar()
                        if count:
                            counts[table] = count
        return counts

    def _rebuild(self, server_id, body=None, microversion='latest',
                 api=None):
        """POST a rebuild action; returns the raw response."""
        api = api or self.api
        body = body if body is not None else {'imageRef': self.image_id}
        with utils.temporary_mutation(api, microversion=microversion):
            return api.api_post('/servers/%s/action' % server_id,
                                {'rebuild': body},
                                check_response_status=False)

    def _create_buried_server(self, microversion='latest', api=None,
                              **server):
        """Create a server while no compute exists; wait for its burial."""
        api = api or self.api
        body = self._build_server(image_uuid=server.pop('imageRef',
                                                        self.image_id),
                                  networks=server.pop('networks', 'none'))
        body.update(server)
        with utils.temporary_mutation(api, microversion=microversion):
            created = api.post_server({'server': body})
        return self._wait_for_state_change(created, 'ERROR')

    def _bury_directly(self, count, project_id='p', user_id='u'):
        """Write buried servers straight into cell0 (fast), as Nova does.

        :returns: their uuids.
        """
        flavor = nova_objects.Flavor.get_by_flavor_id(self.admin_context,
                                                      '1')
        cell0 = self._cell0()
        uuids = []
        for _ in range(count):
            uuid = uuidutils.generate_uuid()
            with nova_context.target_cell(self.admin_context,
                                          cell0) as cctxt:
                instance = nova_objects.Instance(
                    cctxt, uuid=uuid, project_id=project_id,
                    user_id=user_id, vm_state=vm_states.ERROR,
                    flavor=flavor, instance_type_id=flavor.id,
                    reservation_id='r-x', system_metadata={})
                instance.create()
                nova_objects.InstanceFault(
                    cctxt, instance_uuid=uuid, code=500,
                    message='No valid host was found. ', details='',
                    host=None).create()
            nova_objects.InstanceMapping(
                self.admin_context, instance_uuid=uuid,
                project_id=project_id, user_id=user_id,
                cell_mapping=cell0).create()
            uuids.append(uuid)
        return uuids

    def _set_capacity(self, available, host='host1'):
        """Start a compute or enable it (available), or disable it."""
        if host not in self.computes:
            if not available:
                return
            self._start_compute(host)
            return
        service = self.admin_api.get_services(
            binary='nova-compute', host=host)[0]
        self.admin_api.put_service(
            service['id'],
            {'status': 'enabled' if available else 'disabled'})

    def _record_casts(self):
        """The uuids Nova's conductor is asked to build, in order."""
        casts = []
        real_cast = conductor_api.ComputeTaskAPI.schedule_and_build_instances

        def recording_cast(api, context, build_requests, *args, **kwargs):
            casts.extend(br.instance_uuid for br in build_requests)
            return real_cast(api, context, build_requests, *args, **kwargs)
        self.useFixture(fixtures_lib.MonkeyPatch(
            'nova.conductor.api.ComputeTaskAPI.schedule_and_build_instances',
            recording_cast))
        return casts

    @property
    def lease_seconds(self):
        return cfg.CONF.cell0_rebuild.move_lease_seconds

    def _expire_move_leases(self, server_id=None):
        """Let moves' leases run out, as if their holders stopped a day ago.

        Time is not waited for: the journal rows are dated back.
        """
        past = timeutils.utcnow() - datetime.timedelta(days=1)
        with db_api.writer(self.admin_context) as session:
            query = session.query(models.MoveJournal)
            if server_id is not None:
                query = query.filter_by(instance_uuid=server_id)
            query.update({'updated_at': past, 'lease_expires_at': past},
                         synchronize_session=False)

    def _heal_after_restart(self, server_id=None):
        """What heal does once the interrupted moves' leases ran out."""
        self._expire_move_leases(server_id)
        return heal.heal(self.admin_context, self.lease_seconds,
                         instance_uuid=server_id)
