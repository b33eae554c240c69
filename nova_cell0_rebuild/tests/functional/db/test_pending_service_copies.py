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

"""Two copies of the pending service on one coordination URL: one
dispatches, the other stands by and takes over when the first stops.

Real tooz locks (its file driver: copies on one host) and the epoch row in
SQLite; the dispatchers record what they are asked (what a pass does on
Nova is ``tests/functional/test_pending_service.py``'s).
"""

import fixtures
from nova import context as nova_context
from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.pending import service as service_mod
from nova_cell0_rebuild.tests.functional.db import base

CONF = cfg.CONF
DELETED = {'nova_object.name': 'InstanceActionPayload',
           'nova_object.data': {'uuid': 'a-server', 'host': 'host1'}}


class _Dispatcher(object):

    def __init__(self):
        self.in_flight = {}
        self.calls = []

    def __getattr__(self, name):
        if name not in service_mod.PendingService.SWEEP_STEPS + (
                'run_pass',):
            raise AttributeError(name)
        return lambda: self.calls.append(name)


class _Listener(object):

    def __init__(self):
        self.running = False

    def start(self):
        self.running = True

    def stop(self):
        self.running = False


class _Copy(object):
    """A copy: its service, dispatcher, listener and clock."""

    def __init__(self, test, holder):
        self.now = 1000.0
        self.dispatcher = _Dispatcher()
        self.listener = _Listener()
        self.leadership = leader.Leadership(test.context, test.url, holder)
        self.leadership.start()
        test.addCleanup(self.leadership.stop)
        self.service = service_mod.PendingService(
            CONF, self.dispatcher, self.leadership,
            listener_factory=lambda endpoint: self.listener,
            clock=lambda: self.now)

    def tick_after(self, seconds):
        self.now += seconds
        return self.service.tick()

    def passes(self):
        return self.dispatcher.calls.count('run_pass')


class PendingServiceCopiesTest(base.BackendTestCase):

    def setUp(self):
        super().setUp()
        plugin_conf.register_opts(CONF)
        self.useFixture(config_fixture.Config(CONF))
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()
        self.url = 'file://' + self.useFixture(fixtures.TempDir()).path

    def test_one_copy_dispatches_the_other_takes_over(self):
        first, second = _Copy(self, 'host-a:1'), _Copy(self, 'host-b:2')
        first.service.start()
        second.service.start()
        self.assertEqual((True, False), (first.service.leading,
                                         second.service.leading))
        self.assertEqual((True, False), (first.listener.running,
                                         second.listener.running))
        for copy in (first, second):
            copy.tick_after(0)
            # A notification in hand as the listener stops is dropped by
            # a standby.
            copy.service.endpoint.info({}, 'nova-compute:host1',
                                       'instance.delete.end', DELETED, {})
        for _ in range(3):
            for copy in (first, second):
                copy.tick_after(leader.ELECTION_SECONDS)
        # The leader's sweep pass and the event's pass; the standby none.
        self.assertEqual((2, 0), (first.passes(), second.passes()))
        self.assertEqual(1, objects.PendingEpoch.get(
            self.context, leader.NAME).epoch)

        # The first copy stops (SIGTERM): the lock is released, the
        # second is elected at its next try and starts with a sweep.
        first.service.stop()
        first.service.run()
        self.assertFalse(first.listener.running)
        second.tick_after(leader.ELECTION_SECONDS)
        self.assertEqual((False, True), (first.service.leading,
                                         second.service.leading))
        self.assertTrue(second.listener.running)
        self.assertEqual(list(service_mod.PendingService.SWEEP_STEPS) +
                         ['run_pass'], second.dispatcher.calls)
        epoch = objects.PendingEpoch.get(self.context, leader.NAME)
        self.assertEqual((2, 'host-b:2'), (epoch.epoch, epoch.holder))
