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

"""Why Nova's queues must outlive a RabbitMQ restart.

A rebuild from cell0 ends with the cast of Nova's own
``schedule_and_build_instances`` to the conductor's topic; from then on
the move only goes forward (the journal is done at ``cast_sent``, heal
leaves it alone), as Nova's create does. A cast that RabbitMQ accepted
but no conductor consumed yet (all conductors restarting, or busy) lives
only in the conductor's queue: if RabbitMQ restarts then, it survives on a
durable queue and is lost on a transient one, and the server stays a
BuildRequest, in BUILD, until its user deletes it.

Here the conductor's side is an oslo.messaging RPC server on the topic
``conductor`` of a private RabbitMQ node, configured as nova.conf would
configure it: it declares its queue and stops, the cast is sent, the node
is stopped and started again, a new server starts. The cloud job
(tests/cloud/test_faults.py) does the same with the real services on
quorum queues. ``nova-cell0-rebuild-status upgrade check`` warns about the
transient configuration.
"""

import queue

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging
import testtools

from nova_cell0_rebuild.tests.functional import test_aardvark_relay as relay

#: Seconds a cast that survived takes to reach the new server (at most).
WAIT = 30
#: Seconds to wait for a cast that should have been lost.
LOST_AFTER = 8


class Conductor(object):
    """The endpoint of the stand-in conductor: what it received."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self):
        self.received = queue.Queue()

    def schedule_and_build_instances(self, ctxt, uuid):
        self.received.put(uuid)


class CastAcrossRestartTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        _processes, rabbitmq = relay._minicloud_modules()
        if not rabbitmq.installed():
            message = 'RabbitMQ is not installed (%s)' % rabbitmq.BIN
            if relay.REQUIRE_RABBITMQ:
                self.fail(message)
            self.skipTest(message)
        self.rabbit = self.useFixture(relay.RabbitMQNode())

    def _transport(self, rabbit_options):
        """A transport configured as nova.conf's *rabbit_options* say.

        On the global configuration, as Nova's services have it (oslo.
        messaging registers some of its options there only).
        """
        conf = self.useFixture(config_fixture.Config(cfg.CONF))
        # Registers [oslo_messaging_rabbit].
        oslo_messaging.get_rpc_transport(
            cfg.CONF, url=self.rabbit.url).cleanup()
        conf.config(control_exchange='nova')
        conf.config(group='oslo_messaging_rabbit', **rabbit_options)
        return oslo_messaging.get_rpc_transport(cfg.CONF,
                                                url=self.rabbit.url)

    def _serve(self, transport, conductor):
        server = oslo_messaging.get_rpc_server(
            transport, oslo_messaging.Target(topic='conductor',
                                             server='conductor-host'),
            [conductor], executor='threading')
        server.start()
        return server

    def _cast_across_restart(self, rabbit_options):
        """Cast while no conductor runs, restart the node, serve again.

        :returns: what the new conductor received within the wait.
        """
        transport = self._transport(rabbit_options)
        try:
            # The conductor declared its queue, then stopped.
            server = self._serve(transport, Conductor())
            server.stop()
            server.wait()
            client = oslo_messaging.get_rpc_client(
                transport, oslo_messaging.Target(topic='conductor',
                                                 version='1.0'))
            client.cast({}, 'schedule_and_build_instances', uuid='buried')
        finally:
            transport.cleanup()
        self.rabbit.node.stop()
        self.rabbit.node.start(timeout=90)
        transport = self._transport(rabbit_options)
        conductor = Conductor()
        server = self._serve(transport, conductor)
        received = []
        try:
            received.append(conductor.received.get(
                timeout=WAIT if rabbit_options else LOST_AFTER))
        except queue.Empty:
            pass
        finally:
            server.stop()
            server.wait()
            transport.cleanup()
        return received

    def test_quorum_queue_keeps_the_cast(self):
        # What the minicloud's nova.conf sets, as production runs.
        self.assertEqual(['buried'], self._cast_across_restart(
            {'rabbit_quorum_queue': True}))

    def test_durable_classic_queue_keeps_the_cast(self):
        self.assertEqual(['buried'], self._cast_across_restart(
            {'amqp_durable_queues': True}))

    def test_transient_queue_loses_the_cast(self):
        # oslo.messaging's defaults: the cast is gone with the restart.
        self.assertEqual([], self._cast_across_restart({}))
