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

"""The Aardvark relay on a real RabbitMQ, with Nova's real burials.

Nova (in-process, no compute) buries servers in cell0; the
``compute_task.build_instances.error`` its conductor sent is published on a
private RabbitMQ node exactly as Nova sent it (publisher, priority, event
type, payload); the relay, built from the configuration as the console
script builds it, listens there and judges each server on Nova's
databases; a listener configured as Aardvark configures its own (no pool,
its ``[notification] topics``, one endpoint per event type with a
``NotificationFilter``) receives what the relay publishes. Nova's own
services talk over oslo.messaging's fake driver, which passes exceptions
through unchanged; one test has the conductor call the scheduler over the
node instead, so that the burial names the exception as a cloud's does.

The node is started from the Debian package (rabbitmq-server) with the
minicloud's code (tools/minicloud/rabbitmq.py): its own directories, node
name, AMQP, distribution and epmd ports. Without the package the test is
skipped, unless NOVA_CELL0_REBUILD_REQUIRE_RABBITMQ is set (as .ci/run
sets it): then it fails.
"""

import base64
import importlib.util
import os
import queue
import socket
import sys
import time

import fixtures
from nova.objects import base as nova_objects_base
from nova import rpc as nova_rpc
from nova.scheduler import rpcapi as scheduler_rpcapi
from nova import utils as nova_utils
from oslo_config import cfg
import oslo_messaging
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from oslo_utils import strutils

from nova_cell0_rebuild.cmd import aardvark_relay
from nova_cell0_rebuild.conf import cell0_rebuild_relay as relay_conf
from nova_cell0_rebuild.relay import burials
from nova_cell0_rebuild.tests.functional import base

CONF = cfg.CONF

REQUIRE_RABBITMQ = strutils.bool_from_string(
    os.environ.get('NOVA_CELL0_REBUILD_REQUIRE_RABBITMQ', '0'))
SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
MINICLOUD = os.path.join(SOURCE_TREE, 'tools', 'minicloud')
AARDVARK_TOPIC = 'cell0_rebuild_aardvark'
#: How long Aardvark's listener waits for the relay's events.
WAIT = 30


def _minicloud_modules():
    """tools/minicloud's processes and rabbitmq modules (they import each
    other by name, as scripts of that folder).
    """
    loaded = {}
    saved = sys.modules.get('processes')
    try:
        for name in ('processes', 'rabbitmq'):
            spec = importlib.util.spec_from_file_location(
                'minicloud_' + name, os.path.join(MINICLOUD, name + '.py'))
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # for "import processes"
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        sys.modules.pop('rabbitmq', None)
        if saved is None:
            sys.modules.pop('processes', None)
        else:
            sys.modules['processes'] = saved
    return loaded['processes'], loaded['rabbitmq']


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class RabbitMQNode(fixtures.Fixture):
    """A private RabbitMQ node for one test, stopped at its end."""

    def _setUp(self):
        processes, rabbitmq = _minicloud_modules()
        workdir = self.useFixture(fixtures.TempDir()).path
        port = _free_port()
        self.node = rabbitmq.PrivateRabbitMQ(
            processes.Processes(workdir), os.path.join(workdir, 'rabbitmq'),
            'relaytest%d@localhost' % port, port, dist_port=_free_port(),
            epmd_port=_free_port())
        self.addCleanup(self.node.stop)
        self.node.start(timeout=60)
        self.url = self.node.url


def _conf_file(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, 'w') as conf_file:
        conf_file.write(text)
    return path


class AardvarkListener(object):
    """A listener configured as Aardvark configures its own.

    Both branches' ListenerManager._get_listeners
    (aardvark/notifications/manager.py): one Target per ``[notification]
    topics``, a transport per ``[notification] urls``, no pool; each
    endpoint filters on its event types (NotificationEndpoint in
    aardvark/notifications/base.py): the scheduling event's ``error``, the
    update's ``info``. Its configuration file sets ``[DEFAULT]
    control_exchange = nova``, as the relay's documentation says.
    """

    def __init__(self, config_file, url, topic, scheduling_event):
        self.received = queue.Queue()
        conf = cfg.ConfigOpts()
        conf(['--config-file', config_file], project='aardvark')
        self.transport = oslo_messaging.get_notification_transport(
            conf, url=url)
        endpoints = [self._endpoint(scheduling_event, 'error'),
                     self._endpoint('instance.update', 'info')]
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, [oslo_messaging.Target(topic=topic)], endpoints,
            executor='threading')

    def _endpoint(self, event_type, priority):
        received = self.received

        class Endpoint(object):
            filter_rule = oslo_messaging.NotificationFilter(
                event_type=event_type)

        def record(ctxt, publisher_id, event_type, payload, metadata):
            received.put((priority, event_type, payload))
        setattr(Endpoint, priority, staticmethod(record))
        return Endpoint()

    def start(self):
        self.listener.start()

    def stop(self):
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()

    def events(self, count, timeout=WAIT):
        """The next *count* events, in the order they came."""
        found, deadline = [], time.monotonic() + timeout
        while len(found) < count:
            try:
                found.append(self.received.get(
                    timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                break
        return found


class AardvarkRelayTest(base.Cell0RebuildTestCase):

    def setUp(self):
        processes, rabbitmq = _minicloud_modules()
        if not rabbitmq.installed():
            message = ('RabbitMQ is not installed (%s/rabbitmq-server): '
                       'apt-get install rabbitmq-server' % rabbitmq.BIN)
            if REQUIRE_RABBITMQ:
                self.fail(message)
            self.skipTest(message)
        super().setUp()
        relay_conf.register_opts(CONF)
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # What nova.conf and aardvark.conf say: Nova's exchange is "nova".
        self.exchange_conf = _conf_file(self.tmp, 'exchange.conf',
                                        '[DEFAULT]\ncontrol_exchange = nova\n')
        self.rabbit = self.useFixture(RabbitMQNode())
        self.flags(transport_url=self.rabbit.url,
                   group='oslo_messaging_notifications')
        self.flags(control_exchange='nova')
        self.flags(state_update_delay=0.5, group='cell0_rebuild_relay')

    def start_service(self, name, *args, **kwargs):
        service = super().start_service(name, *args, **kwargs)
        self.services = getattr(self, 'services', {})
        self.services[name] = service
        return service

    def _scheduler_over_rabbitmq(self):
        """Route the conductor's scheduler calls over the RabbitMQ node.

        Nova's services talk over oslo.messaging's fake driver here, which
        hands the scheduler's NoValidHost to the conductor as raised. A
        real transport does not: the scheduler's RPC server serializes it,
        and the conductor's client rebuilds it as ``NoValidHost_Remote``
        (``oslo_messaging._drivers.common.deserialize_remote_exception``),
        the name Nova then puts in the burial's ExceptionPayload. So the
        real scheduler manager is served on the node as ``nova.rpc.
        get_server`` serves it, and the conductor's SchedulerAPI gets a
        client on the node as ``nova.rpc.create_transport`` and
        ``get_client`` make it (Nova's allowed exception modules).
        """
        transport = oslo_messaging.get_rpc_transport(
            CONF, url=self.rabbit.url,
            allowed_remote_exmods=nova_rpc.get_allowed_exmods())
        self.addCleanup(transport.cleanup)
        serializer = nova_rpc.RequestContextSerializer(
            nova_objects_base.NovaObjectSerializer())
        # Releases without the probe run on eventlet only.
        threading = getattr(nova_utils, 'concurrency_mode_threading', None)
        executor = ('threading' if threading and threading()
                    else 'eventlet')
        server = oslo_messaging.get_rpc_server(
            transport, oslo_messaging.Target(
                topic=scheduler_rpcapi.RPC_TOPIC, server='scheduler-host'),
            [self.services['scheduler'].manager], executor=executor,
            serializer=serializer,
            access_policy=rpc_dispatcher.DefaultRPCAccessPolicy)
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        task_manager = self.services['conductor'].manager.compute_task_mgr
        rpcapi = task_manager.query_client.scheduler_rpcapi
        client = oslo_messaging.get_rpc_client(
            transport, oslo_messaging.Target(
                topic=scheduler_rpcapi.RPC_TOPIC, version='4.0'),
            version_cap=rpcapi.client.version_cap, serializer=serializer)
        self.useFixture(fixtures.MockPatchObject(rpcapi, 'client', client))

    def _bury(self):
        """An ordinary server and one with personality files, buried.

        :returns: (their uuids, Nova's burial notifications of both)
        """
        ordinary = self._create_buried_server()['id']
        personality = self._create_buried_server(
            microversion='2.1',
            networks=[{'uuid': self.neutron.network_1['id']}],
            personality=[{'path': '/etc/motd',
                          'contents': base64.b64encode(b'hi').decode()}])['id']
        burials = {}
        for sent in self.notifier.versioned_notifications:
            if sent['event_type'] == 'compute_task.build_instances.error':
                uuid = sent['payload']['nova_object.data']['instance_uuid']
                burials[uuid] = sent
        self.assertEqual({ordinary, personality}, set(burials))
        # The personality one first: it must not be announced.
        return ordinary, personality, [burials[personality],
                                       burials[ordinary]]

    def _as_nova(self, notifications):
        """Publish Nova's notifications as Nova's conductor sent them."""
        conf = cfg.ConfigOpts()
        conf(['--config-file', self.exchange_conf], project='nova')
        transport = oslo_messaging.get_notification_transport(
            conf, url=self.rabbit.url)
        try:
            for sent in notifications:
                notifier = oslo_messaging.Notifier(
                    transport, publisher_id=sent['publisher_id'],
                    driver='messagingv2', topics=['versioned_notifications'])
                getattr(notifier, sent['priority'].lower())(
                    {}, sent['event_type'], sent['payload'])
        finally:
            transport.cleanup()

    def _start_relay_and_aardvark(self, version, scheduling_event):
        """Aardvark's listener and the relay for *version*, started.

        :returns: (the listener, the relay); the caller stops the relay.
        """
        topic = 'aardvark_' + version
        self.flags(aardvark_events=version, publish_topics=[topic],
                   group='cell0_rebuild_relay')
        aardvark = AardvarkListener(self.exchange_conf, self.rabbit.url,
                                    topic, scheduling_event)
        aardvark.start()
        self.addCleanup(aardvark.stop)
        relay = aardvark_relay.build_relay(
            CONF, context_factory=lambda: self.admin_context)
        relay.start()
        return aardvark, relay

    def _relay_to(self, version, notifications, scheduling_event):
        """Run the relay for *version*; :returns: what Aardvark received."""
        aardvark, relay = self._start_relay_and_aardvark(version,
                                                         scheduling_event)
        try:
            self._as_nova(notifications)
            received = aardvark.events(2)
            # Anything more (the refused server's) would come meanwhile.
            received += aardvark.events(1, timeout=2)
        finally:
            relay.stop()
        return received

    def _assert_announced(self, received, uuid, scheduling_event):
        self.assertEqual([('error', scheduling_event),
                          ('info', 'instance.update')],
                         [(priority, event_type)
                          for priority, event_type, _ in received])
        schedule = received[0][2]['nova_object.data']
        self.assertEqual([uuid], schedule['instance_uuids'])
        spec = schedule['request_spec']['nova_object.data']
        self.assertEqual(self.api.project_id, spec['project_id'])
        self.assertIsInstance(spec['id'], int)
        update = received[1][2]['nova_object.data']
        self.assertEqual(uuid, update['uuid'])
        self.assertEqual(self.image_id, update['image_uuid'])
        self.assertEqual(('building', 'pending'), (
            update['state_update']['nova_object.data']['old_state'],
            update['state_update']['nova_object.data']['state']))
        self.assertIn('memory_mb', update['flavor']['nova_object.data'])
        return spec

    def test_both_versions(self):
        ordinary, personality, notifications = self._bury()
        log = self.stdlog.logger.output

        received = self._relay_to('all_in_one', notifications,
                                  'instance.schedule')
        spec = self._assert_announced(received, ordinary,
                                      'instance.schedule')
        self.assertNotIn('requested_destination', spec)
        self.assertEqual('NoValidHost', received[0][2]['nova_object.data'][
            'reason']['nova_object.data']['exception'])
        self.assertIn('%s in cell0 not announced to Aardvark: a rebuild '
                      'from cell0 would be refused by gate personality'
                      % personality, self.stdlog.logger.output[len(log):])

        received = self._relay_to('master', notifications,
                                  'scheduler.select_destinations.error')
        spec = self._assert_announced(
            received, ordinary, 'scheduler.select_destinations.error')
        self.assertIsNone(spec['requested_destination'])
        # An image-backed server: no volume (master would ask Cinder).
        self.assertEqual([], received[1][2]['nova_object.data'][
            'block_devices'])

    def test_connections_closed_while_announcing(self):
        # RabbitMQ closes the relay's connections (a broker restart, a
        # failover) between the two events of an announcement: the burial
        # Nova sent, not yet acknowledged, is delivered again as soon as
        # the relay's listener is back, while the first delivery is still
        # being announced. Aardvark must see it announced once.
        ordinary, _personality, notifications = self._bury()
        # Long enough for rabbitmqctl (an Erlang VM of its own, seconds).
        self.flags(state_update_delay=15, group='cell0_rebuild_relay')
        aardvark, relay = self._start_relay_and_aardvark('all_in_one',
                                                         'instance.schedule')
        try:
            self._as_nova(notifications[-1:])
            first = aardvark.events(1)
            self.assertEqual([('error', 'instance.schedule')],
                             [event[:2] for event in first])
            self.rabbit.node.ctl('close_all_connections', 'relay test')
            self.assertTrue(aardvark.received.empty(),
                            'the connections were closed too late')
            # The update, then whatever a second announcement would send.
            received = aardvark.events(3, timeout=25)
        finally:
            relay.stop()
        self.assertEqual([('info', 'instance.update')],
                         [event[:2] for event in received])
        self.assertEqual(ordinary, received[0][2]['nova_object.data']['uuid'])
        self.assertIn('Burial of server %s in cell0 delivered again while '
                      'it was announced' % ordinary,
                      self.stdlog.logger.output)

    def test_rabbitmq_restarted_while_announcing(self):
        # The node itself is stopped and started again (not only its
        # connections closed) between the announcement's two events, on
        # quorum queues as production runs them: the burial, not yet
        # acknowledged, outlives the restart in the relay's queue and is
        # delivered again once the relay is back; the update the relay
        # still holds is sent once the node is up. Aardvark must see the
        # burial announced once, whole.
        self.exchange_conf = _conf_file(
            self.tmp, 'quorum.conf', '[DEFAULT]\ncontrol_exchange = nova\n'
            '[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n')
        # A rabbit transport registers [oslo_messaging_rabbit] (Nova's
        # services here run on the fake driver).
        oslo_messaging.get_notification_transport(
            CONF, url=self.rabbit.url).cleanup()
        self.flags(rabbit_quorum_queue=True, group='oslo_messaging_rabbit')
        ordinary, _personality, notifications = self._bury()
        # Long enough for the node to stop (an Erlang VM, seconds).
        self.flags(state_update_delay=10, group='cell0_rebuild_relay')
        aardvark, relay = self._start_relay_and_aardvark('all_in_one',
                                                         'instance.schedule')
        try:
            self._as_nova(notifications[-1:])
            first = aardvark.events(1)
            self.assertEqual([('error', 'instance.schedule')],
                             [event[:2] for event in first])
            self.rabbit.node.stop()
            self.assertTrue(aardvark.received.empty(),
                            'the node stopped too late')
            self.rabbit.node.start(timeout=90)
            received = aardvark.events(1, timeout=40)
            # Whatever a second announcement would send comes meanwhile:
            # the redelivery is seconds after the listeners reconnect.
            received += aardvark.events(2, timeout=5)
        finally:
            relay.stop()
        self.assertEqual([('info', 'instance.update')],
                         [event[:2] for event in received])
        self.assertEqual(ordinary, received[0][2]['nova_object.data']['uuid'])
        log = self.stdlog.logger.output
        self.assertEqual(1, log.count('Burial of server %s in cell0 '
                                      'announced to Aardvark' % ordinary))
        # The node did deliver again what was not acknowledged; here the
        # listener's own cache of message ids (oslo.messaging's
        # amqpdriver) dropped it before the relay's endpoint saw it, as it
        # drops the redelivered scheduling event on Aardvark's side.
        self.assertIn('Failed to acknowledge received message', log)
        self.assertIn('Found duplicate message', log)

    def test_no_valid_host_received_over_rpc(self):
        # What a cloud's conductor sends: the scheduler's NoValidHost came
        # over RabbitMQ, and the payload names the class oslo.messaging
        # made of it.
        self._scheduler_over_rabbitmq()
        uuid = self._create_buried_server()['id']
        [sent] = [sent for sent in self.notifier.versioned_notifications
                  if sent['event_type'] == burials.EVENT_TYPE]
        self.assertEqual('NoValidHost_Remote', sent['payload'][
            'nova_object.data']['reason']['nova_object.data']['exception'])

        received = self._relay_to('master', [sent],
                                  'scheduler.select_destinations.error')
        self._assert_announced(received, uuid,
                               'scheduler.select_destinations.error')
        self.assertEqual('NoValidHost_Remote', received[0][2][
            'nova_object.data']['reason']['nova_object.data']['exception'])
