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

"""Nova 34 in this process, assembled with Nova's own functional harness.

:class:`InProcessNova` is a ``nova.test.TestCase`` that is never run as a
test. :meth:`InProcessNova.start` does what Nova's harness does before each
functional test (SQLite databases for the API, cell0 and cell1, the fake RPC
bus, placement, stub Neutron and Glance, nova-api through its paste
pipeline) and then starts Nova's real scheduler, conductor and compute
services; :meth:`InProcessNova.stop` runs the harness's cleanups.
"""

import logging
import os

from nova import context as nova_context
from nova import objects as nova_objects
from nova import rpc
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import fixtures as func_fixtures
from nova.virt import fake as fake_virt
from oslo_config import cfg
import oslo_messaging

from nova_cell0_rebuild.demo import file_databases
from nova_cell0_rebuild import fixture as plugin_fixture

CONF = cfg.CONF


# oslotest reads these when a test case is set up: the demo's output is its
# own, and it must not time out while it serves.
_HARNESS_ENVIRONMENT = {
    'OS_STDOUT_CAPTURE': '0',
    'OS_STDERR_CAPTURE': '0',
    'OS_LOG_CAPTURE': '0',
    'OS_TEST_TIMEOUT': '0',
}


class InProcessNova(test.TestCase):
    """Nova's API (with the cell0_rebuild filter) and services, in-process.

    :param cell0_rebuild_conf: ``[cell0_rebuild]`` options for the plugin.
    :param state: a :class:`.state.SandboxState` whose files hold the
        databases (the API database with the plugin's tables, cell0,
        cell1), or None for the harness's in-memory databases.
    """

    #: The only compute host.
    compute_host = 'host1'
    #: Its virt driver: 2 VCPUs, 8 GiB of RAM, 1028 GB of disk.
    compute_driver = fake_virt.SmallFakeDriver
    #: m1.tiny: 1 VCPU, 512 MB, 1 GB.
    flavor_id = '1'
    #: With allocation ratios of 1.0, two m1.tiny servers fill the compute.
    servers_to_fill = compute_driver.vcpus

    def __init__(self, cell0_rebuild_conf=None, state=None):
        super().__init__('runTest')
        self._plugin_conf = dict(cell0_rebuild_conf or {})
        self.state = state

    def runTest(self):
        """Never run: the cloud is driven by start() and stop()."""

    def start(self):
        """Build the harness and start Nova's services."""
        os.environ.update(_HARNESS_ENVIRONMENT)
        try:
            self.setUp()
        except Exception:
            self.stop()
            raise

    def setUp(self):
        if self.state is not None:
            # An override outlives the harness's ConfFixture, which only
            # sets defaults (sqlite://) and resets CONF at the end.
            CONF.set_override('connection', self.state.url('api'),
                              group='api_database')
        super().setUp()
        self.useFixture(nova_fixtures.RealPolicyFixture())
        self.neutron = self.useFixture(nova_fixtures.NeutronFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.placement = self.useFixture(func_fixtures.PlacementFixture())
        # The plugin, as a deployment enables it: our api-paste.ini with the
        # filter after keystonecontext, [cell0_rebuild] options, its tables.
        self.useFixture(
            plugin_fixture.Cell0RebuildFixture(**self._plugin_conf))
        # nova-api through the paste pipeline. The harness replaces
        # keystonemiddleware and builds each request context from the
        # X-Auth-User, X-Auth-Project-Id and X-Roles headers.
        self.osapi = self.useFixture(
            nova_fixtures.OSAPIFixture(api_version='v2.1'))
        self._send_versioned_notifications()
        # Waits for room, for the science project only: the automatic
        # path after the reaper's (demo/waiting.py).
        self.flags(enabled=True, projects=['science'],
                   group='cell0_rebuild_pending')
        self.flags(compute_driver='fake.%s' % self.compute_driver.__name__,
                   cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                   disk_allocation_ratio=1.0)
        # Scheduler before conductor: services stop in reverse order, and a
        # build in flight must not outlive the conductor.
        self.start_service('scheduler')
        self.start_service('conductor')
        self._start_compute(self.compute_host)

    def _setup_cells(self):
        """The harness's cell0 and cell1, in files when there is a state."""
        if self.state is None:
            return super()._setup_cells()
        file_databases.setup_cells(self, self.state)

    def _send_versioned_notifications(self):
        """Emit versioned notifications on the (fake) message bus.

        The harness keeps notifications in memory; a deployment sends them
        to the bus with ``[notifications] notification_format = versioned``
        and ``[oslo_messaging_notifications] driver = messaging``. Do the
        same, so that a reaper listens with oslo.messaging as in production.
        """
        self.flags(notification_format='versioned', group='notifications')
        self.stub_out('nova.rpc.NOTIFIER', oslo_messaging.Notifier(
            rpc.NOTIFICATION_TRANSPORT, driver='messaging',
            serializer=rpc.RequestContextSerializer(
                rpc.JsonPayloadSerializer()),
            topics=CONF.notifications.versioned_notifications_topics))

    @property
    def wsgi_app(self):
        """nova-api's WSGI application, from the paste pipeline."""
        return self.osapi.app()

    @property
    def image_id(self):
        """The image every server of the demo boots from."""
        return self.glance.image1['id']

    @property
    def network_id(self):
        """A network of the stub Neutron, for requests that need one."""
        return self.neutron.network_1['id']

    def placement_endpoint(self):
        """(endpoint URL, token) of the in-process placement API."""
        return self.placement.endpoint, self.placement.token

    def cell_of(self, server_id):
        """The name of the cell a server is mapped to, or None."""
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            nova_context.get_admin_context(), server_id)
        return mapping.cell_mapping.name if mapping.cell_mapping else None

    def nova_log(self):
        """What Nova logged so far (INFO and up, DEBUG with OS_DEBUG=1)."""
        return self.stdlog.logger.output

    def stop(self):
        """Stop the services and undo the harness, newest first.

        :returns: the errors raised by cleanups, as strings.
        """
        errors = []
        # The harness's log capture is undone first; what Nova logs while
        # its services stop is not the demo's output.
        logging.disable(logging.INFO)
        try:
            while self._cleanups:
                function, args, kwargs = self._cleanups.pop()
                try:
                    function(*args, **kwargs)
                except Exception as exc:
                    errors.append('%s: %s' % (type(exc).__name__, exc))
        finally:
            logging.disable(logging.NOTSET)
        return errors
