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

"""A small pre-emptible reaper that works the way Aardvark (CERN) does.

It listens with oslo.messaging to Nova's versioned notification
``compute_task.build_instances.error``, which Nova's conductor sends when a
create fails to schedule and the server is buried in cell0. It then deletes
servers of pre-emptible projects on a host until the failed server fits,
waits until placement no longer holds their allocations, and rebuilds the
failed server from cell0 with only ``imageRef``, at the plugin's
microversion (``POST /servers/{id}/action {"rebuild": {"imageRef": ...}}``).

It talks to Nova and placement only through their REST APIs, with
keystoneauth adapters: point them at a real cloud and the same code works.
It rebuilds with the image the notification names; for a volume-backed
server that would be the image of its boot volume, which Aardvark asks
Cinder for and this sketch does not.
"""

import collections
import json
import re
import threading
import time

import oslo_messaging

BUILD_ERROR = 'compute_task.build_instances.error'

#: The projects whose servers may be deleted to make room for others.
PREEMPTIBLE_PROJECTS = frozenset(['preemptible'])

#: What the reaper compares, as Aardvark does.
RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')

#: A failed create, as the notification tells it.
FailedCreate = collections.namedtuple(
    'FailedCreate', 'server_id project_id image_id needs reason')

#: What the reaper did about one failed create.
Outcome = collections.namedtuple(
    'Outcome', 'server_id victims rebuild_status message')


class NotEnoughRoom(Exception):
    """No host can fit the server, even without its pre-emptible servers."""


def failed_create(payload):
    """Read a FailedCreate from a compute_task.build_instances.error payload.
    """
    data = payload['nova_object.data']
    spec = data['request_spec']['nova_object.data']
    flavor = spec['flavor']['nova_object.data']
    swap_gb = (flavor['swap'] + 1023) // 1024
    return FailedCreate(
        server_id=data['instance_uuid'],
        project_id=spec['project_id'],
        image_id=spec['image']['nova_object.data']['id'],
        needs={'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['memory_mb'],
               'DISK_GB': flavor['root_gb'] + flavor['ephemeral_gb'] +
               swap_gb},
        reason=data['reason']['nova_object.data']['exception'])


def _fits(needs, free):
    return all(free.get(rc, 0) >= needs[rc] for rc in needs)


def _amounts(resources):
    return ' '.join('%s=%s' % (rc, resources.get(rc, 0))
                    for rc in RESOURCE_CLASSES)


class Reaper(object):
    """An oslo.messaging notification endpoint that makes room and rebuilds.

    :param compute: keystoneauth Adapter for Nova, as an admin.
    :param placement: keystoneauth Adapter for placement.
    :param microversion: the plugin's ``[cell0_rebuild] min_microversion``.
    :param report: called with (actor, message) for each step.
    :param preemptible_projects: project ids whose servers may be deleted.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % re.escape(BUILD_ERROR))

    def __init__(self, compute, placement, microversion, report,
                 preemptible_projects=PREEMPTIBLE_PROJECTS, timeout=30.0,
                 max_attempts=3):
        self.compute = compute
        self.placement = placement
        self.microversion = microversion
        self.report = report
        self.preemptible_projects = preemptible_projects
        self.timeout = timeout
        self.max_attempts = max_attempts
        self._attempts = collections.Counter()
        self._outcomes = {}
        self._done = threading.Condition()

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        """Handle one ``compute_task.build_instances.error``."""
        failed = failed_create(payload)
        self.report('reaper', 'got %s from %s: server %s of project %s '
                    '(%s)' % (event_type, publisher_id, failed.server_id,
                              failed.project_id, failed.reason))
        try:
            outcome = self.handle(failed)
        except Exception as exc:
            self.report('reaper', 'gave up on %s: %s' % (failed.server_id,
                                                         exc))
            outcome = Outcome(failed.server_id, [], None, str(exc))
        with self._done:
            self._outcomes[failed.server_id] = outcome
            self._done.notify_all()
        return oslo_messaging.NotificationResult.HANDLED

    def handle(self, failed):
        """Make room for a failed create, then rebuild it from cell0."""
        if failed.project_id in self.preemptible_projects:
            self.report('reaper', 'a pre-emptible create is never served')
            return Outcome(failed.server_id, [], None, 'pre-emptible')
        # A rebuild that fails to schedule again is buried again, and
        # notified again: stop at some point, as Aardvark does.
        self._attempts[failed.server_id] += 1
        if self._attempts[failed.server_id] > self.max_attempts:
            self.report('reaper', 'tried %d times, leaving %s in ERROR'
                        % (self.max_attempts, failed.server_id))
            return Outcome(failed.server_id, [], None, 'too many attempts')
        victims = self.make_room(failed.needs)
        body = {'rebuild': {'imageRef': failed.image_id}}
        resp = self.compute.post('/servers/%s/action' % failed.server_id,
                                 json=body, microversion=self.microversion)
        self.report('reaper', 'POST /servers/%s/action %s at %s -> %d %s'
                    % (failed.server_id, json.dumps(body), self.microversion,
                       resp.status_code, resp.reason))
        message = ''
        if resp.status_code >= 400:
            # Nova's faults: {"conflictingRequest": {"message": ...}}.
            message = next(iter(resp.json().values()))['message']
            self.report('reaper', 'refused: %s' % message)
        return Outcome(failed.server_id, victims, resp.status_code, message)

    def wait_for(self, server_id, timeout):
        """The Outcome for a server once handled, or None after timeout."""
        with self._done:
            self._done.wait_for(lambda: server_id in self._outcomes,
                                timeout)
            return self._outcomes.get(server_id)

    def make_room(self, needs):
        """Delete pre-emptible servers on one host until *needs* fit.

        :returns: the deleted servers, as Nova shows them.
        :raises: NotEnoughRoom when no host can fit it.
        """
        for host, free in sorted(self._free_by_host().items()):
            before = dict(free)
            victims = []
            for server in self._preemptible_servers(host):
                if _fits(needs, free):
                    break
                used = self._allocations(server['id'])
                for rc in RESOURCE_CLASSES:
                    free[rc] = free.get(rc, 0) + used.get(rc, 0)
                victims.append(server)
            if not _fits(needs, free):
                continue
            self.report('reaper', 'needs %s; %s has %s free: deleting %s'
                        % (_amounts(needs), host, _amounts(before),
                           ', '.join(v['name'] for v in victims)
                           or 'nothing'))
            for victim in victims:
                self.compute.delete('/servers/%s' % victim['id'])
            for victim in victims:
                self._wait_until_freed(victim)
            if victims:
                self.report('placement', '%s has %s free' % (
                    host, _amounts(self._free_by_host()[host])))
            return victims
        raise NotEnoughRoom('no host can fit %s' % needs)

    def _free_by_host(self):
        """{host: {resource class: free amount}} from placement."""
        free = {}
        providers = self.placement.get(
            '/resource_providers').json()['resource_providers']
        for rp in providers:
            url = '/resource_providers/%s' % rp['uuid']
            inventories = self.placement.get(
                url + '/inventories').json()['inventories']
            usages = self.placement.get(url + '/usages').json()['usages']
            free[rp['name']] = {
                rc: int((inv['total'] - inv['reserved']) *
                        inv['allocation_ratio']) - usages.get(rc, 0)
                for rc, inv in inventories.items()}
        return free

    def _preemptible_servers(self, host):
        """ACTIVE pre-emptible servers on a host, youngest first."""
        servers = []
        for project_id in sorted(self.preemptible_projects):
            servers += self.compute.get('/servers/detail', params={
                'all_tenants': 1, 'project_id': project_id, 'host': host,
                'status': 'ACTIVE'}).json()['servers']
        return sorted(servers, key=lambda s: (s['created'], s['name']),
                      reverse=True)

    def _allocations(self, server_id):
        """{resource class: amount} placement holds for a server."""
        allocations = self.placement.get(
            '/allocations/%s' % server_id).json()['allocations']
        used = collections.Counter()
        for provider in allocations.values():
            used.update(provider['resources'])
        return used

    def _wait_until_freed(self, victim):
        deadline = time.monotonic() + self.timeout
        while self._allocations(victim['id']):
            if time.monotonic() > deadline:
                raise TimeoutError('placement still holds the allocations '
                                   'of %s' % victim['id'])
            time.sleep(0.1)
        self.report('placement', 'allocations of %s (%s) are gone'
                    % (victim['name'], victim['id']))


def listen(transport, reaper, topics=('versioned_notifications',)):
    """Start an oslo.messaging notification listener for the reaper.

    :param transport: a notification transport, e.g.
        ``oslo_messaging.get_notification_transport(CONF)``.
    :param topics: Nova's ``[notifications] versioned_notifications_topics``.
    :returns: the started listener; ``stop()`` and ``wait()`` it.
    """
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=t) for t in topics],
        [reaper], executor='threading', pool='pre-emptible-reaper')
    listener.start()
    return listener
