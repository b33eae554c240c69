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

"""The pre-emptible scenario, played through the sandbox's HTTP API.

Users of two projects and the reaper talk to nova-api over HTTP with
keystoneauth, as real clients do; only the cell a server is mapped to, which
Nova's API does not show, is read from Nova's API database.
"""

import base64
import collections
import time

from nova_cell0_rebuild.demo import clients

#: A project the reaper's PREEMPTIBLE_PROJECTS names.
PREEMPTIBLE = 'preemptible'
#: A project whose servers are never deleted for others.
SCIENCE = 'science'

#: One line of the summary table.
Step = collections.namedtuple('Step', 'name expected observed ok')


def _short(message, width=60):
    return message if len(message) <= width else message[:width - 3] + '...'


class StepFailed(Exception):
    """A step could not go on (timeout, unexpected answer)."""


class PreemptibleScenario(object):
    """Fill, fail, reap, rebuild; then a server that cannot be rebuilt.

    :param endpoint: the compute endpoint of the sandbox.
    :param cloud: the InProcessNova (image, network, flavor, cells).
    :param reaper: the running Reaper, to wait for what it did.
    :param microversion: the plugin's ``[cell0_rebuild] min_microversion``.
    :param report: called with (actor, message) for each event.
    """

    def __init__(self, endpoint, cloud, reaper, microversion, report,
                 timeout=30.0):
        self.cloud = cloud
        self.reaper = reaper
        self.report = report
        self.fill = cloud.servers_to_fill
        self.timeout = timeout
        self.users = {
            project: clients.compute(endpoint, project, microversion)
            for project in (PREEMPTIBLE, SCIENCE)}
        self.admin = clients.admin_compute(endpoint, microversion)
        self.buried = None

    def run(self):
        """Play every step; a step that cannot go on ends the scenario.

        :returns: the list of Step, one per summary line.
        """
        steps = []
        for title, play in (
                ('fill the compute', self.fill_compute),
                ('bury a science server', self.bury_a_science_server),
                ('reap and rebuild', self.reap_and_rebuild),
                ('the server comes back', self.come_back),
                ('refuse personality files', self.refuse_personality)):
            try:
                steps += play()
            except Exception as exc:
                failure = (str(exc) if isinstance(exc, StepFailed) else
                           '%s: %s' % (type(exc).__name__, exc))
                self.report('demo', 'FAILED: %s' % failure)
                steps.append(Step(title, 'no failure', failure, False))
                break
        return steps

    def fill_compute(self):
        servers = [self._create(PREEMPTIBLE, 'pre-%d' % (i + 1))
                   for i in range(self.fill)]
        hosts = []
        for server in servers:
            self._wait(PREEMPTIBLE, server, 'ACTIVE')
            hosts.append(self._host(server['id']))
            self.report(PREEMPTIBLE, '%s is ACTIVE on %s'
                        % (server['name'], hosts[-1]))
        expected = '%d ACTIVE on %s' % (self.fill, self.cloud.compute_host)
        observed = '%d ACTIVE on %s' % (len(hosts), ','.join(sorted(
            set(hosts))))
        return [Step('fill the compute with pre-emptible servers',
                     expected, observed, expected == observed)]

    def bury_a_science_server(self):
        server = self._create(SCIENCE, 'sci-1')
        server = self._wait(SCIENCE, server, 'ERROR')
        self.buried = server
        fault = server.get('fault', {}).get('message', '').strip()
        cell = self.cloud.cell_of(server['id'])
        self.report(SCIENCE, '%s is %s in %s, fault: %s'
                    % (server['name'], server['status'], cell, fault))
        return [Step('a science create while full is buried',
                     'ERROR, No valid host, cell0',
                     '%s, %s, %s' % (server['status'], fault, cell),
                     'No valid host' in fault and cell == 'cell0')]

    def reap_and_rebuild(self):
        outcome = self._outcome(self.buried)
        victims = [v['name'] for v in outcome.victims]
        return [
            Step('the reaper deletes enough pre-emptible servers',
                 '1 deleted', '%d deleted %s' % (len(victims), victims),
                 len(victims) == 1),
            Step('the reaper rebuilds it from cell0 (imageRef only)',
                 '202', str(outcome.rebuild_status),
                 outcome.rebuild_status == 202)]

    def come_back(self):
        server = self._wait(SCIENCE, self.buried, 'ACTIVE')
        host = self._host(server['id'])
        cell = self.cloud.cell_of(server['id'])
        self.report(SCIENCE, '%s is ACTIVE with its original UUID %s, on '
                    'host %s in %s' % (server['name'], server['id'], host,
                                       cell))
        return [
            Step('the rebuilt server is ACTIVE in a real cell',
                 'ACTIVE on %s in cell1' % self.cloud.compute_host,
                 '%s on %s in %s' % (server['status'], host, cell),
                 (server['status'], host, cell) ==
                 ('ACTIVE', self.cloud.compute_host, 'cell1')),
            Step('it keeps its UUID', self.buried['id'], server['id'],
                 server['id'] == self.buried['id'])]

    def refuse_personality(self):
        personality = [{'path': '/etc/motd',
                        'contents': base64.b64encode(b'hello').decode()}]
        server = self._create(
            SCIENCE, 'sci-files', microversion='2.1',
            personality=personality,
            networks=[{'uuid': self.cloud.network_id}])
        server = self._wait(SCIENCE, server, 'ERROR')
        cell = self.cloud.cell_of(server['id'])
        self.report(SCIENCE, '%s (personality files, 2.1) is %s in %s'
                    % (server['name'], server['status'], cell))
        outcome = self._outcome(server)
        return [
            Step('a create with personality files while full is buried',
                 'ERROR in cell0', '%s in %s' % (server['status'], cell),
                 (server['status'], cell) == ('ERROR', 'cell0')),
            Step('its rebuild from cell0 is refused',
                 '409 created with personality files',
                 '%s %s' % (outcome.rebuild_status, _short(
                     outcome.message.replace(server['id'], '<id>'))),
                 outcome.rebuild_status == 409 and
                 'created with personality files' in outcome.message)]

    def _create(self, project, name, microversion=None, **extra):
        server = {'name': name, 'imageRef': self.cloud.image_id,
                  'flavorRef': self.cloud.flavor_id, 'networks': 'none'}
        server.update(extra)
        client = self.users[project]
        microversion = microversion or client.default_microversion
        resp = client.post('/servers', json={'server': server},
                           microversion=microversion)
        if resp.status_code != 202:
            raise StepFailed('POST /servers %s: %d %s'
                             % (name, resp.status_code, resp.text))
        created = dict(resp.json()['server'], name=name)
        self.report(project, 'POST /servers %s at %s -> 202, id %s'
                    % (name, microversion, created['id']))
        return created

    def _wait(self, project, server, status):
        deadline = time.monotonic() + self.timeout
        while True:
            resp = self.users[project].get('/servers/%s' % server['id'])
            current = resp.json().get('server', {})
            if current.get('status') == status:
                return current
            if time.monotonic() > deadline:
                raise StepFailed('%s is %s after %d s, not %s' % (
                    server['name'], current.get('status', resp.status_code),
                    self.timeout, status))
            time.sleep(0.1)

    def _host(self, server_id):
        server = self.admin.get('/servers/%s' % server_id).json()['server']
        return server['OS-EXT-SRV-ATTR:host']

    def _outcome(self, server):
        outcome = self.reaper.wait_for(server['id'], self.timeout)
        if outcome is None:
            raise StepFailed('the reaper did nothing about %s in %d s'
                             % (server['name'], self.timeout))
        return outcome
