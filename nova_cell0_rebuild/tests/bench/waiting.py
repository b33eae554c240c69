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

"""B6: a buried server that waits, rebuilt by the pending service, against
a user who looks every 30 s and rebuilds by hand.

Each arm has a host of its own with room for exactly one server of its
flavor (a custom trait the flavor requires, and a RAM size of which one
fits), held by a server at every round's start. A round of an arm deletes
that holder, and the server that takes its room holds it for the next
round:

* **service**: servers buried in cell0 and opted in with ``PUT
  .../wait``, as a user does, before the service starts (a wait opened by
  ``PUT`` gets its shape at a sweep, and the service's first act is one).
  The real ``PendingService`` runs in its worker thread with the real
  clock; Nova's versioned notifications are handed to its endpoint as the
  listener would, every 10 ms (as ``tests/functional/test_pending_service``
  hands them). From the ``DELETE``'s answer until one waiting server is
  ACTIVE: ``instance.delete.end`` -> a pass ``event_delay_seconds`` later
  -> placement's candidates -> the dispatcher's rebuild -> ACTIVE.
* **user**: servers buried without a wait. The user looks at the server
  (``GET /servers/{id}``) every ``PERIOD`` seconds and rebuilds it by
  hand when there is room: the time until the next look is a phase drawn
  uniformly in ``[0, PERIOD)`` per round (seeded), not slept; the rebuild
  that follows is measured, ``POST`` -> ACTIVE, in the same round.

The service keeps running during the user's rounds: the user's ``DELETE``
makes it run a pass, which finds no room for its own flavor.
"""

import collections
import os
import threading
import time

from nova import objects as nova_objects
from oslo_config import cfg

from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.pending import service as service_mod
from nova_cell0_rebuild.tests.bench import harness as harness_lib
from nova_cell0_rebuild.tests import benchstats

CONF = cfg.CONF
SERVICE = 'service (waiting)'
USER = 'user (30 s polls)'
#: Seconds between two looks of the user at the buried server.
PERIOD = 30.0
#: Seconds between two deliveries of Nova's notifications to the service.
DELIVERY_INTERVAL = 0.01
#: RAM of a B6 flavor: one fits a FakeDriver host (800,000 MB), two do not.
FLAVOR_RAM_MB = 500000
#: {arm: (host, flavor id, the trait its flavor requires)}.
SLOTS = {SERVICE: ('b6-service', 'b6-service', 'CUSTOM_BENCH_B6_SERVICE'),
         USER: ('b6-user', 'b6-user', 'CUSTOM_BENCH_B6_USER')}

progress = harness_lib.progress


class _Delivery(object):
    """Hands Nova's versioned notifications to the service's endpoint, in
    order, from a thread of its own, as the service's listener would.
    """

    def __init__(self, notifier, endpoint):
        self.notifier = notifier
        self.endpoint = endpoint
        self.delivered = len(notifier.versioned_notifications)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(30)

    def _run(self):
        while not self._stop.is_set():
            sent = self.notifier.versioned_notifications[self.delivered:]
            self.delivered += len(sent)
            for note in sent:
                method = getattr(self.endpoint, note['priority'].lower(),
                                 None)
                if method is not None:
                    method({}, note['publisher_id'], note['event_type'],
                           note['payload'], {})
            self._stop.wait(DELIVERY_INTERVAL)


class WaitingBench(object):
    """B6 on a harness; ``run()`` returns its raw samples.

    :param h: the :class:`~.harness.Harness`.
    :param rounds: interleaved rounds (one warm-up round more, untimed).
    :param seed: of the user's phases.
    """

    def __init__(self, h, rounds, seed):
        self.h = h
        self.rounds = rounds
        self.seed = seed
        self.holders = {}
        self.buried = {}
        self.service = None
        self._worker = None
        self._delivery = None

    # -- set-up --------------------------------------------------------------

    def _slot(self, host, flavor_id, trait):
        """A compute with room for one server of a flavor only it fits."""
        h = self.h
        h._start_compute(host)
        rp_uuid = h.placement.get(
            '/resource_providers?name=%s' % host).body[
                'resource_providers'][0]['uuid']
        h.placement.put('/traits/%s' % trait, {}, version='1.6')
        traits = h.placement.get('/resource_providers/%s/traits' % rp_uuid,
                                 version='1.6').body
        h.placement.put('/resource_providers/%s/traits' % rp_uuid, {
            'resource_provider_generation':
                traits['resource_provider_generation'],
            'traits': traits['traits'] + [trait]}, version='1.6')
        flavor = nova_objects.Flavor(
            context=h.admin_context, name=flavor_id, flavorid=flavor_id,
            memory_mb=FLAVOR_RAM_MB, vcpus=1, root_gb=1, ephemeral_gb=0,
            swap=0, extra_specs={'trait:%s' % trait: 'required'})
        flavor.create()

    def set_up(self):
        h = self.h
        h.flags(notification_format='versioned', group='notifications')
        h.flags(enabled=True, group='cell0_rebuild_pending')
        for arm, slot in SLOTS.items():
            self._slot(*slot)
        count = self.rounds + 1
        for arm, (_host, flavor_id, _trait) in SLOTS.items():
            resp = h.call('with', h.create_request(flavor_id), 202)
            self.holders[arm] = resp.json['server']['id']
            h.wait_for('cell1', [self.holders[arm]], 'active')
            progress('B6: burying %d servers (%s)', count, arm)
            self.buried[arm] = h.bury('with', count, flavor=flavor_id)
        for server_id in self.buried[SERVICE]:
            h.call('with', h.request(
                'PUT', '/os-cell0-rebuild/servers/%s/wait' % server_id,
                {'wait': {'deadline': '1h'}}), 200)
        h.settle()

    def start_service(self):
        """The service as ``cmd/pending.py`` builds it, minus RabbitMQ."""
        h = self.h
        leadership = leader.Leadership(
            h.admin_context, None, leader.holder_of('bench', os.getpid()))
        dispatcher = dispatcher_mod.Dispatcher(
            CONF, h.admin_context, leadership.holder,
            fence=leadership.renew)
        self.service = service_mod.PendingService(CONF, dispatcher,
                                                  leadership)
        self._delivery = _Delivery(h.notifier, self.service.endpoint)
        self.service.start()
        if not self.service.leading:
            raise harness_lib.BenchError('B6: the pending service was not '
                                         'elected')
        self._worker = threading.Thread(target=self.service.run,
                                        daemon=True)
        self._worker.start()
        self._delivery.start()
        # Its first sweep computes the waits' shapes; its pass finds no
        # room.
        deadline = time.monotonic() + 60
        while self.service.passes < 1:
            if time.monotonic() > deadline:
                raise harness_lib.BenchError('B6: no first sweep')
            time.sleep(0.05)
        h.settle()

    def stop_service(self):
        if self._delivery is not None:
            self._delivery.stop()
        if self.service is not None:
            self.service.stop()
            self._worker.join(60)
            if self._worker.is_alive():
                raise harness_lib.BenchError('B6: the pending service did '
                                             'not stop')

    # -- one round of each arm ----------------------------------------------

    def _free(self, arm):
        """DELETE the arm's holder: perf_counter at its answer."""
        h = self.h
        h.call('with', h.delete_request(self.holders[arm]), 204)
        return time.perf_counter()

    def _first_active(self, uuids, timeout=60.0):
        """(uuid, perf_counter) of the first of *uuids* seen ACTIVE."""
        deadline = time.monotonic() + timeout
        while True:
            for uuid, (vm, task) in self.h.states('cell1', uuids).items():
                if vm == 'active' and task is None:
                    return uuid, time.perf_counter()
            if time.monotonic() > deadline:
                raise harness_lib.BenchError(
                    'B6: no waiting server ACTIVE %ss after the room was '
                    'freed' % timeout)
            time.sleep(0.02)

    def service_round(self):
        """Seconds from the DELETE's answer to a waiting server ACTIVE."""
        waiting = self.buried[SERVICE]
        freed = self._free(SERVICE)
        uuid, active = self._first_active(waiting)
        waiting.remove(uuid)
        self.holders[SERVICE] = uuid
        return active - freed

    def user_round(self):
        """Seconds of the user's rebuild, POST -> ACTIVE, once the room is
        free (the phase is added by the caller).
        """
        h = self.h
        server_id = self.buried[USER].pop(0)
        self._free(USER)
        h.call('with', h.request('GET', '/servers/%s' % server_id), 200)
        start = time.perf_counter()
        h.call('with', h.rebuild_request(server_id), 202)
        active = h.wait_for('cell1', [server_id], 'active')[server_id]
        self.holders[USER] = server_id
        return active - start

    def run(self):
        h = self.h
        self.set_up()
        drawn = benchstats.phases(self.seed, self.rounds, PERIOD)
        progress('B6: user phases (seed %s): %s', self.seed,
                 ' '.join('%.1f' % phase for phase in drawn))
        samples = collections.OrderedDict(
            (arm, {'active': [], 'order': []}) for arm in (SERVICE, USER))
        rebuilds = []
        self.start_service()
        try:
            # Untimed: the first pass that dispatches loads code paths.
            self.service_round()
            h.settle()
            self.user_round()
            h.settle()
            progress('B6: %d interleaved rounds', self.rounds)
            for index in range(self.rounds):
                order = [SERVICE, USER][index % 2:] + [SERVICE, USER][
                    :index % 2]
                for place, arm in enumerate(order):
                    if arm == SERVICE:
                        seconds = self.service_round()
                    else:
                        rebuild = self.user_round()
                        rebuilds.append(rebuild)
                        seconds = drawn[index] + rebuild
                    samples[arm]['active'].append(seconds)
                    samples[arm]['order'].append(place)
                    h.settle()
        finally:
            self.stop_service()
        return {'seed': self.seed, 'period': PERIOD, 'phases': drawn,
                'user_rebuild': rebuilds, 'passes': self.service.passes,
                'samples': samples}
