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

"""What every scenario test does: a full cloud, a buried server, room."""

import base64
import datetime
import time

import testtools

from nova_cell0_rebuild.tests.cloud import clients

#: Two computes of 8 GiB, flavors of 3 GiB: two servers on each.
SLOTS = 4
PROJECT_CLOUDS = ('demo-member', 'other-member')
#: The topics of Nova's RPC servers: each has a queue of its own
#: (``conductor``) and one per host (``conductor.<host>``).
RPC_TOPICS = ('conductor', 'scheduler', 'compute')


class CloudTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.cloud = clients.load()
        self.addCleanup(self._delete_all_servers)

    # -- servers -------------------------------------------------------

    def create(self, name, flavor='standard', cloud='demo-member',
               microversion=clients.MICROVERSION, **extra):
        """POST a server; :returns: (its id, seconds the POST took)."""
        body = {'server': dict({
            'name': name, 'imageRef': self.cloud.image_id,
            'flavorRef': self.cloud.description['flavors'][flavor],
            'networks': 'none'}, **extra)}
        status, answer, seconds = self.cloud.compute(
            cloud, 'POST', '/servers', body, microversion=microversion)
        self.assertEqual(202, status, answer)
        return answer['server']['id'], seconds

    def create_with_files(self, cloud='demo-member'):
        """POST a server with personality files (2.56, the last to take them).

        The raw API, with curl: openstack server create --file is broken in
        OSC 10.5. :returns: its id.
        """
        status, body = self.cloud.curl(
            cloud, 'POST', '/servers', {'server': {
                'name': 'with-files', 'imageRef': self.cloud.image_id,
                'flavorRef': self.cloud.description['flavors']['standard'],
                'networks': 'none',
                'personality': [{'path': '/etc/motd', 'contents':
                                 base64.b64encode(b'hi').decode()}]}},
            microversion='2.56')
        self.assertEqual(202, status, body)
        return body['server']['id']

    def show(self, uuid, cloud='demo-member'):
        status, answer, _ = self.cloud.compute(cloud, 'GET',
                                               '/servers/%s' % uuid)
        self.assertEqual(200, status, answer)
        return answer['server']

    def wait_for_status(self, uuid, wanted, cloud='demo-member',
                        timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            server = self.show(uuid, cloud)
            if server['status'] == wanted and (
                    server.get('OS-EXT-STS:task_state') is None):
                return server
            if time.monotonic() > deadline:
                self.fail('%s is %s (task %s, fault %s), not %s, after %ss'
                          % (uuid, server['status'],
                             server.get('OS-EXT-STS:task_state'),
                             server.get('fault'), wanted, timeout))
            time.sleep(0.5)

    def wait_for_nova_after_rabbitmq(self, timeout=180):
        """Until Nova's services work again after RabbitMQ restarted.

        Each service reconnects after its own back-off, which grows to
        30 s ([oslo_messaging_rabbit] rabbit_interval_max). And a compute
        whose state report (an RPC call to the conductor) was in flight
        when RabbitMQ went away waits for the lost reply until
        rpc_response_timeout (60 s): by then its last report is older
        than service_down_time (60 s), and the scheduler's ComputeFilter
        leaves it out ("has not been heard from in a while"). Measured:
        the next test's create buried for NoValidHost.

        So: every queue of Nova's RPC servers has a consumer again, and
        every nova-compute has reported its state since this was called.
        """
        since = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        deadline = time.monotonic() + timeout
        while True:
            late = self._rpc_queues_idle() + self._computes_not_heard_since(
                since)
            if not late:
                return
            if time.monotonic() > deadline:
                self.fail('%ss after RabbitMQ was back, still: %s'
                          % (timeout, ', '.join(late)))
            time.sleep(1)

    def _rpc_queues_idle(self):
        return sorted('no consumer on queue %s' % name
                      for name, (consumers, _) in self.cloud.queues().items()
                      if name.split('.')[0] in RPC_TOPICS and not consumers)

    def _computes_not_heard_since(self, since):
        status, answer, _ = self.cloud.compute('admin', 'GET',
                                               '/os-services')
        self.assertEqual(200, status, answer)
        return sorted(
            '%s last reported at %s' % (service['host'],
                                        service['updated_at'])
            for service in answer['services']
            if service['binary'] == 'nova-compute' and (
                not service['updated_at'] or datetime.datetime.strptime(
                    service['updated_at'][:19], '%Y-%m-%dT%H:%M:%S')
                <= since))

    def fill(self, count=SLOTS):
        """Fill the computes with pre-emptible servers (one multi-create)."""
        _, answer, _ = self.cloud.compute(
            'demo-member', 'POST', '/servers', {'server': {
                'name': 'preemptible', 'imageRef': self.cloud.image_id,
                'flavorRef': self.cloud.description['flavors']['preemptible'],
                'networks': 'none',
                'min_count': count, 'return_reservation_id': True}})
        reservation = answer['reservation_id']
        _, listing, _ = self.cloud.compute(
            'demo-member', 'GET',
            '/servers?reservation_id=%s' % reservation)
        uuids = [server['id'] for server in listing['servers']]
        self.assertEqual(count, len(uuids), listing)
        for uuid in uuids:
            self.wait_for_status(uuid, 'ACTIVE')
        return uuids

    def bury(self, name, **extra):
        """Create a server on a full cloud: it ends in cell0, in ERROR."""
        uuid, seconds = self.create(name, **extra)
        server = self.wait_for_status(uuid, 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        return uuid

    def delete(self, uuid, cloud='demo-member'):
        self.cloud.compute(cloud, 'DELETE', '/servers/%s' % uuid)
        self.wait_gone(uuid, cloud)

    def wait_gone(self, uuid, cloud='demo-member', timeout=120):
        """Until the server is gone and its room is free in placement.

        Nova's API answers 404 once the instance row is deleted; its
        compute releases the allocation after that. A build scheduled in
        between finds no room (NoValidHost): measured in CI, a rebuild
        posted at the 404 of the pre-emptible deleted for it was buried
        again.
        """
        deadline = time.monotonic() + timeout
        while self.cloud.compute(cloud, 'GET', '/servers/%s' % uuid)[0] \
                != 404 or self.cloud.placement_allocations(uuid):
            if time.monotonic() > deadline:
                self.fail('%s still there (or allocated) after %ss'
                          % (uuid, timeout))
            time.sleep(0.5)

    def full_cloud_with_a_buried_server(self, name='buried', **extra):
        """Pre-emptibles everywhere, then a server that is buried.

        :returns: (buried server's id, the pre-emptibles' ids)
        """
        preemptibles = self.fill()
        return self.bury(name, **extra), preemptibles

    def rebuild_body(self):
        return {'rebuild': {'imageRef': self.cloud.image_id}}

    def rebuild(self, uuid, cloud='demo-member', api='nova-api-1'):
        """POST the rebuild action with curl; :returns: (status, body)."""
        return self.cloud.curl(cloud, 'POST', '/servers/%s/action' % uuid,
                               self.rebuild_body(), api=api)

    def assert_one_allocation(self, uuid):
        allocations = self.cloud.placement_allocations(uuid)
        self.assertEqual(1, len(allocations), allocations)

    def _delete_all_servers(self):
        for cloud in PROJECT_CLOUDS:
            _, listing, _ = self.cloud.compute(cloud, 'GET', '/servers')
            for server in listing['servers']:
                self.cloud.compute(cloud, 'DELETE',
                                   '/servers/%s' % server['id'])
            for server in listing['servers']:
                self.wait_gone(server['id'], cloud)
