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

"""The automatic path, after the reaper's: a buried server waits for room.

The reaper is stopped by then. A science user creates a server with the
metadata key ``cell0_rebuild:wait`` while the compute is full; it is
buried and waits. A pre-emptible user deletes a server of their own, and
nobody asks for a rebuild: the pending service, listening to Nova's
versioned notifications on the same message bus as the reaper did, hears
``instance.delete.end`` and rebuilds the waiting server, same UUID.
"""

import threading
import time

from nova import context as nova_context

from nova_cell0_rebuild.cmd import pending as pending_cmd
from nova_cell0_rebuild.demo import scenario

#: The deadline the science user gives the wait (user/waiting.rst).
DEADLINE = '1h'


class PendingService(object):
    """``nova-cell0-rebuild-pending`` in this process, as its command runs it.

    :param conf: Nova's configuration, with ``[cell0_rebuild_pending]``
        enabled.
    """

    def __init__(self, conf):
        self.service, self._transport = pending_cmd.build_service(
            conf, nova_context.get_admin_context(), holder='demo:pending')
        self._worker = threading.Thread(target=self.service.run,
                                        name='pending-worker', daemon=True)
        self._worker.start()

    def stop(self):
        self.service.stop()
        self._worker.join(30)
        self._transport.cleanup()


class WaitingScenario(scenario.PreemptibleScenario):
    """Bury a server that opted in, free room, see it come back alone.

    :param placement: a keystoneauth Adapter for placement.
    """

    def __init__(self, endpoint, cloud, placement, microversion, report,
                 timeout=30.0):
        super().__init__(endpoint, cloud, None, microversion, report,
                         timeout=timeout)
        self.placement = placement

    def run(self):
        steps = []
        for title, play in (('fill again', self.refill),
                            ('a server waits', self.bury_a_waiting_server),
                            ('room frees, it comes back', self.free_room),
                            ('leave room', self.leave_room)):
            try:
                steps += play()
            except scenario.StepFailed as exc:
                self.report('demo', 'FAILED: %s' % exc)
                steps.append(scenario.Step(title, 'no failure', str(exc),
                                           False))
                break
        return steps

    def refill(self):
        """Fill the room the reaper freed in vain with pre-emptibles again.

        The reaper deleted a pre-emptible server for ``sci-files``, whose
        rebuild was refused: without this, ``sci-2`` would not be buried.
        """
        running = sum(
            1 for project in (scenario.PREEMPTIBLE, scenario.SCIENCE)
            for server in self.users[project].get(
                '/servers/detail').json().get('servers', [])
            if server['status'] == 'ACTIVE')
        created = [self._create(scenario.PREEMPTIBLE, 'pre-%d' % (index + 3))
                   for index in range(self.fill - running)]
        for server in created:
            self._wait(scenario.PREEMPTIBLE, server, 'ACTIVE')
        return [scenario.Step(
            'the pre-emptible project fills the compute again',
            '%d ACTIVE' % self.fill, '%d ACTIVE' % (running + len(created)),
            running + len(created) == self.fill)]

    def bury_a_waiting_server(self):
        server = self._create(scenario.SCIENCE, 'sci-2', metadata={
            'cell0_rebuild:wait': DEADLINE})
        server = self._wait(scenario.SCIENCE, server, 'ERROR')
        self.buried = server
        wait = self._wait_view(server)
        self.report(scenario.SCIENCE, '%s is %s in %s; GET '
                    '/os-cell0-rebuild/servers/%s says waiting %s, '
                    'deadline %s' % (
                        server['name'], server['status'],
                        self.cloud.cell_of(server['id']), server['id'],
                        wait.get('waiting'), wait.get('deadline')))
        return [scenario.Step(
            'a science create with cell0_rebuild:wait=%s while full'
            % DEADLINE, 'ERROR, waiting', '%s, %s' % (
                server['status'],
                'waiting' if wait.get('waiting') else 'not waiting'),
            server['status'] == 'ERROR' and wait.get('waiting') is True)]

    def free_room(self):
        victim = self._a_preemptible()
        deleted = time.monotonic()
        resp = self.users[scenario.PREEMPTIBLE].delete(
            '/servers/%s' % victim['id'])
        self.report(scenario.PREEMPTIBLE, 'DELETE /servers/%s (%s) -> %d; '
                    'nobody asks for a rebuild' % (
                        victim['id'], victim['name'], resp.status_code))
        server = self._wait(scenario.SCIENCE, self.buried, 'ACTIVE')
        seconds = time.monotonic() - deleted
        cell = self.cloud.cell_of(server['id'])
        self.report(scenario.SCIENCE, '%s is ACTIVE with its original UUID '
                    '%s in %s, %.1f s after the delete' % (
                        server['name'], server['id'], cell, seconds))
        return [
            scenario.Step('the pending service rebuilds it by itself',
                          'ACTIVE in cell1', '%s in %s' % (
                              server['status'], cell),
                          (server['status'], cell) == ('ACTIVE', 'cell1')),
            scenario.Step('it keeps its UUID', self.buried['id'],
                          server['id'], server['id'] == self.buried['id'])]

    def leave_room(self):
        """The science user deletes ``sci-1``, done with it.

        ``--serve`` hands the sandbox over with one VCPU free, as before
        the automatic path (quickstart: "Try it with stock clients").
        """
        servers = self.users[scenario.SCIENCE].get('/servers').json()
        done = [server for server in servers.get('servers', [])
                if server['name'] == 'sci-1']
        if not done:
            raise scenario.StepFailed('sci-1 is not there to delete')
        server = done[0]
        resp = self.users[scenario.SCIENCE].delete(
            '/servers/%s' % server['id'])
        self._released(server)
        self.report(scenario.SCIENCE, 'DELETE /servers/%s (sci-1, done '
                    'with it) -> %d; its allocations are gone' % (
                        server['id'], resp.status_code))
        return [scenario.Step('the science project deletes sci-1',
                              '204, room for one', '%d, room for one'
                              % resp.status_code, resp.status_code == 204)]

    def _released(self, server):
        """Until placement no longer holds *server*'s allocations."""
        deadline = time.monotonic() + self.timeout
        while self.placement.get('/allocations/%s' % server['id']).json()[
                'allocations']:
            if time.monotonic() > deadline:
                raise scenario.StepFailed(
                    'placement still holds the allocations of %s after '
                    '%d s' % (server['name'], self.timeout))
            time.sleep(0.1)

    def _a_preemptible(self):
        resp = self.users[scenario.PREEMPTIBLE].get('/servers')
        servers = resp.json().get('servers', [])
        if not servers:
            raise scenario.StepFailed('no pre-emptible server to delete')
        return servers[0]

    def _wait_view(self, server):
        """The wait as the rebuildability API shows it to its user."""
        resp = self.users[scenario.SCIENCE].get(
            '/os-cell0-rebuild/servers/%s' % server['id'])
        if resp.status_code != 200:
            raise scenario.StepFailed(
                'GET /os-cell0-rebuild/servers/%s: %d %s' % (
                    server['id'], resp.status_code, resp.text))
        return resp.json()['cell0_server']['wait']
