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

"""Who may rebuild a server buried in cell0: a matrix through the real API.

Nova's new policy defaults are on (``[oslo_policy] enforce_new_defaults``,
which the harness turns off, see harness-notes.md). The expectations are
Nova 34's own defaults: ``os_compute_api:servers:rebuild`` is
``rule:project_member_or_admin`` (a member of the server's project, or an
admin), and so is the plugin's ``cell0_rebuild:servers:rebuild_from_cell0``;
the ``service`` role is not in either. Nova loads the server for the
caller's project before it checks policy, so a caller of another project
gets the 404 of a server that does not exist, and a caller of the owner
project without the rule gets 403. A refusal of the gates (lock,
personality: 409) is only seen by a caller allowed to rebuild.
"""

import re

from nova.policies import base as nova_policy_base
from nova.policies import servers as nova_server_policies
from nova import policy as nova_policy
from oslo_utils import uuidutils
from testtools import content

from nova_cell0_rebuild.policies import rebuild as rebuild_policies
from nova_cell0_rebuild.tests.functional import base

CELL0 = '00000000-0000-0000-0000-000000000000'
OTHER_PROJECT = 'other-project'
SERVICE_PROJECT = 'service'

#: name: (user, project or None for the owner's, roles as Keystone expands
#: them: admin implies member implies reader).
CALLERS = (
    ('other project member', 'other', OTHER_PROJECT, ['member', 'reader']),
    ('service (service project)', 'nova', SERVICE_PROJECT, ['service']),
    ('service (owner project)', 'svc', None, ['service']),
    ('owner reader', 'reader', None, ['reader']),
    ('owner member', 'fake', None, ['member', 'reader']),
    ('project admin', 'admin', None, ['admin', 'member', 'reader']),
)

_REFUSED = {'other project member': 404, 'service (service project)': 404,
            'service (owner project)': 403, 'owner reader': 403}
#: action: {caller: status}.
EXPECTED = {
    'rebuild': dict(_REFUSED, **{'owner member': 202,
                                 'project admin': 202}),
    'rebuild locked': dict(_REFUSED, **{'owner member': 409,
                                        'project admin': 202}),
    'rebuild personality': dict(_REFUSED, **{'owner member': 409,
                                             'project admin': 409}),
    'rebuild unknown uuid': {name: 404 for name, _, _, _ in CALLERS},
}
#: Nova's own answers, for a server in cell1.
EXPECTED['nova: rebuild in cell1'] = EXPECTED['rebuild']

FAULTS = {202: None, 403: 'forbidden', 404: 'itemNotFound',
          409: 'conflictingRequest'}
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def _masked(body):
    return _UUID.sub('UUID', str(body))


class PolicyMatrixTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        # PlacementFixture turned the new defaults off (harness-notes.md),
        # and rules are resolved when loaded: reload them with them on.
        self.flags(enforce_new_defaults=True, group='oslo_policy')
        nova_policy.reset()
        nova_policy.init()
        self.clients = {
            name: self._client(user, project or self.api.project_id, roles)
            for name, user, project, roles in CALLERS}
        self.matrix = {}
        self.addCleanup(self._add_matrix_detail)

    def _add_matrix_detail(self):
        actions = sorted(self.matrix)
        if not actions:
            return
        width = max(len(name) for name, _, _, _ in CALLERS)
        lines = ['%-*s  %s' % (width, 'caller', '  '.join(actions))]
        for name, _, _, _ in CALLERS:
            cells = []
            for action in actions:
                got = self.matrix[action].get(name, '-')
                want = EXPECTED[action][name]
                cell = str(got) if got == want else '%s!=%s' % (got, want)
                cells.append(cell.ljust(len(action)))
            lines.append(('%-*s  %s' % (width, name,
                                        '  '.join(cells))).rstrip())
        self.addDetail('policy-matrix',
                       content.text_content('\n'.join(lines) + '\n'))

    def _create_buried(self, count, microversion='latest', **server):
        """Create *count* servers while no compute exists; wait for burial.
        """
        networks = server.pop('networks', 'none')
        created = []
        for _ in range(count):
            body = self._build_server(image_uuid=self.image_id,
                                      networks=networks)
            body.update(server)
            self.api.microversion = microversion
            created.append(self.api.post_server({'server': body}))
            self.api.microversion = 'latest'
        return [self._wait_for_state_change(s, 'ERROR') for s in created]

    def _untouched(self, server):
        return (self.admin_api.get_server(server['id'])['updated'],
                self._mapped_cell_uuid(server['id']),
                self._cell0_rows(server['id']))

    def _check_refusal(self, name, resp, status):
        fault = resp.body[FAULTS[status]]
        self.assertEqual(status, fault['code'])
        if status == 404:
            # No existence leak: the body of a server that does not exist.
            missing = self._rebuild(uuidutils.generate_uuid(),
                                    api=self.clients[name])
            self.assertEqual(404, missing.status)
            self.assertEqual(_masked(missing.body), _masked(resp.body))
        elif status == 403:
            self.assertIn('os_compute_api:servers:rebuild',
                          fault['message'])
        return fault['message']

    def _column(self, action, servers, messages=(), exists=True,
                cell=CELL0, wait_for=None):
        """Send every caller's rebuild; each 202 uses up a server.

        :param wait_for: the status to wait for after each 202.
        """
        self.matrix[action] = row = {}
        servers = list(servers)
        accepted = []
        # Refusals first: they must leave the server as it is.
        order = sorted(CALLERS, key=lambda c: EXPECTED[action][c[0]] == 202)
        for name, _, _, _ in order:
            server = servers[0]
            before = self._untouched(server) if exists else None
            resp = self._rebuild(server['id'], api=self.clients[name])
            row[name] = resp.status
            self.assertEqual(EXPECTED[action][name], resp.status,
                             '%s: %s' % (name, resp.body))
            if resp.status == 202:
                self.assertIn(resp.body['server']['status'],
                              ('BUILD', 'REBUILD'))
                accepted.append(servers.pop(0))
                if wait_for:
                    self._wait_for_state_change(server, wait_for)
                continue
            message = self._check_refusal(name, resp, resp.status)
            if resp.status == 409:
                for phrase in messages:
                    self.assertIn(phrase, message)
            if exists:
                self.assertEqual(before, self._untouched(server), name)
                self.assertEqual(cell, self._mapped_cell_uuid(server['id']))
        return accepted

    def test_nova_defaults_are_the_ones_derived_from(self):
        rules = {rule.name: rule.check_str for rule in
                 nova_server_policies.list_rules() +
                 nova_policy_base.list_rules() + rebuild_policies.rules}
        for name in ('os_compute_api:servers:rebuild',
                     'os_compute_api:servers:rebuild:trusted_certs',
                     rebuild_policies.REBUILD_FROM_CELL0):
            self.assertEqual('rule:project_member_or_admin', rules[name])
        # No "service" role in it: the service rules are separate.
        self.assertEqual('rule:project_member_api or rule:context_is_admin',
                         rules['project_member_or_admin'])
        self.assertEqual('role:member and project_id:%(project_id)s',
                         rules['project_member_api'])
        self.assertEqual('role:admin', rules['context_is_admin'])

    def test_rebuild(self):
        servers = self._create_buried(2)
        self._start_compute('host1')
        accepted = self._column('rebuild', servers)
        for server in accepted:
            self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(2, len(accepted))

    def test_nova_rebuild_in_cell1(self):
        # Nova's own matrix, for a server in a real cell: the same.
        self._start_compute('host1')
        server = self._wait_for_state_change(self.api.post_server({
            'server': self._build_server(image_uuid=self.image_id,
                                         networks='none')}), 'ACTIVE')
        self._column('nova: rebuild in cell1', [server, server],
                     cell=self.cell_mappings['cell1'].uuid,
                     wait_for='ACTIVE')

    def test_refusals(self):
        locked, = self._create_buried(1)
        self.api.post_server_action(locked['id'], {'lock': {}})
        with_files, = self._create_buried(
            1, microversion='2.1', networks=[
                {'uuid': self.neutron.network_1['id']}],
            personality=[{'path': '/etc/motd', 'contents': 'aGVsbG8='}])
        self._start_compute('host1')
        accepted = self._column('rebuild locked', [locked], ['is locked'])
        self.assertEqual([locked['id']], [s['id'] for s in accepted])
        # The first refusal writes the personality marker (its one write,
        # see test_personality_marker); after it no caller changes a thing.
        self.assertEqual(409, self._rebuild(with_files['id'],
                                            api=self.admin_api).status)
        self._column('rebuild personality', [with_files],
                     ['created with personality files'])
        self._column('rebuild unknown uuid',
                     [{'id': uuidutils.generate_uuid()}], exists=False)
        self._wait_for_state_change(locked, 'ACTIVE')
