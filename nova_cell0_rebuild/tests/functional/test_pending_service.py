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

"""The pending service on real Nova in one process: Nova's notifications,
as its in-process notifier recorded them, are handed to the service's
endpoint as oslo.messaging would; the worker's ``tick()`` is called with a
fake clock (the cloud job covers RabbitMQ and the worker thread).
"""

from oslo_config import cfg

from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.pending import service as service_mod
from nova_cell0_rebuild.tests.functional import test_pending_dispatcher

CONF = cfg.CONF


class _Clock(object):

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class PendingServiceTest(test_pending_dispatcher._PendingTestBase):

    def setUp(self):
        super().setUp()
        self.admin_api.post_flavor({'flavor': {
            'name': 'pair', 'id': 'pair', 'vcpus': 2, 'ram': 512,
            'disk': 1}})
        self.clock = _Clock()
        self.leadership = leader.Leadership(self.admin_context, None,
                                            'test-host:1')
        self.addCleanup(self.leadership.stop)
        self.dispatcher = dispatcher_mod.Dispatcher(
            CONF, self.admin_context, 'test-host:1',
            fence=self.leadership.renew)
        self.service = service_mod.PendingService(
            CONF, self.dispatcher, self.leadership, clock=self.clock)
        self.delivered = 0

    def _deliver(self):
        """Hand Nova's notifications sent since the last call to the
        endpoint, with their priority, as the listener would.
        """
        sent = self.notifier.versioned_notifications[self.delivered:]
        self.delivered += len(sent)
        for note in sent:
            method = getattr(self.service.endpoint,
                             note['priority'].lower(), None)
            if method is not None:
                method({}, note['publisher_id'], note['event_type'],
                       note['payload'], {})

    def _fill(self):
        """Project b's server that takes host1's two VCPUs, ACTIVE."""
        return self._wait_for_state_change(self.api_b.post_server(
            {'server': self._build_server(
                image_uuid=self.image_id, flavor_id='pair',
                networks='none')}), 'ACTIVE')

    def _tick_after(self, seconds):
        self.clock.now += seconds
        return self.service.tick()

    def test_room_freed_by_a_deletion_rebuilds_the_waiting_server(self):
        self._start_compute('host1')
        filler = self._fill()
        waiter = self._bury(self.api_a)
        self.service.start()
        self.assertTrue(self.service.leading)
        # The burial goes to the intake; the new dispatcher's sweep and
        # pass find no room.
        self._deliver()
        self._tick_after(0)
        wait = self._wait(waiter['id'])
        self.assertEqual(('waiting', 'no_candidate', 0),
                         (wait.state, wait.reason_code, wait.attempts))
        self.assertEqual(1, self.service.passes)

        self.api_b.delete_server(filler['id'])
        self.notifier.wait_for_versioned_notifications('instance.delete.end')
        self.assertEqual({}, self._allocations(filler['id']))
        self._deliver()
        # Coalesced: nothing before event_delay_seconds, then one pass.
        self._tick_after(0)
        self.assertEqual(1, self.service.passes)
        self._tick_after(CONF.cell0_rebuild_pending.event_delay_seconds)
        self.assertEqual(2, self.service.passes)

        active = self._wait_for_state_change(waiter, 'ACTIVE')
        self.assertEqual(waiter['id'], active['id'])
        self.assertEqual(1, len(self._allocations(waiter['id'])))
        self.assertIn(waiter['id'], self.dispatcher.in_flight)
        # Its instance.create.start settles the wait.
        self._deliver()
        self._tick_after(0)
        self.assertEqual({}, self.dispatcher.in_flight)
        self.assertIsNone(self._wait(waiter['id']))
        [end] = self._ours('cell0_rebuild.wait.end')
        self.assertEqual((waiter['id'], 'rebuilt'),
                         (end['instance_uuid'], end['reason']))
        self.assertEqual(2, self.service.passes)

    def test_a_wait_opened_through_the_api_is_served_without_a_sweep(self):
        # Found by the bench's B6: PUT .../wait stored the wait without its
        # request shape, which only the sweep computed (every 300 s by
        # default): room freed meanwhile went to nobody.
        self._start_compute('host1')
        filler = self._fill()
        server = self._bury(self.api_a, opt_in=None)
        self.service.start()
        self._deliver()
        self._tick_after(0)  # the new dispatcher's sweep
        self.assertIsNone(self._wait(server['id']))
        resp = self.api_a.api_put(
            '/os-cell0-rebuild/servers/%s/wait' % server['id'],
            {'wait': {'deadline': '2h'}}, check_response_status=False)
        self.assertEqual(200, resp.status, resp.body)
        self._ours('cell0_rebuild.wait.start')  # sent
        self._deliver()
        self._tick_after(CONF.cell0_rebuild_pending.event_delay_seconds)
        wait = self._wait(server['id'])
        self.assertIsNotNone(wait.shape_key)
        self.assertEqual(('waiting', 'no_candidate'),
                         (wait.state, wait.reason_code))

        self.api_b.delete_server(filler['id'])
        self.notifier.wait_for_versioned_notifications('instance.delete.end')
        self.assertEqual({}, self._allocations(filler['id']))
        self._deliver()
        self._tick_after(CONF.cell0_rebuild_pending.event_delay_seconds)
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(server['id'], active['id'])
        self.assertEqual(1, len(self._allocations(server['id'])))
