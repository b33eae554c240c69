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

"""An operator's own gate, enabled as an operator would, on real Nova."""

from nova_cell0_rebuild.conf import cell0_rebuild as conf_group
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import example_gate
from nova_cell0_rebuild.tests import gate_fixtures

CELL0 = '00000000-0000-0000-0000-000000000000'


class ProjectAllowListGateTest(base.Cell0RebuildTestCase):

    cell0_rebuild_conf = {
        'enabled_gates': list(conf_group.GATE_NAMES) + ['project_allowlist'],
    }

    def setUp(self):
        # As if the operator's package were installed. nova-api loads the
        # gates when OSAPIFixture builds the paste pipeline, inside the
        # base class's setUp, so stevedore must see the entry point first.
        self.useFixture(gate_fixtures.ExtraGateEntryPoints(
            project_allowlist='%s:%s' % (
                example_gate.__name__,
                example_gate.ProjectAllowListGate.__name__)))
        super().setUp()

    def _allow(self, *projects):
        # The gate registered its options when nova-api loaded it.
        self.flags(rebuild_projects=list(projects),
                   group=example_gate.GROUP)

    def _create_buried(self):
        created = self.api.post_server({'server': self._build_server(
            image_uuid=self.image_id, networks='none')})
        server = self._wait_for_state_change(created, 'ERROR')
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        return server

    def test_project_not_listed_is_refused_and_nothing_changes(self):
        self._allow('some-other-project')
        server = self._create_buried()
        rows = self._cell0_rows(server['id'])
        self._start_compute('host1')

        resp = self._rebuild(server['id'])

        self.assertEqual(403, resp.status, resp.body)
        self.assertEqual({'forbidden': {
            'code': 403,
            'message': 'Project %s is not allowed to rebuild servers '
                       'buried in cell0; delete server %s and create it '
                       'again.' % (server['tenant_id'], server['id'])}},
            resp.body)
        now = self.admin_api.get_server(server['id'])
        self.assertEqual('ERROR', now['status'])
        self.assertIsNone(now['OS-EXT-STS:task_state'])
        self.assertEqual(server['updated'], now['updated'])
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        self.assertEqual(rows, self._cell0_rows(server['id']))

    def test_listed_project_is_rebuilt(self):
        server = self._create_buried()
        self._allow('some-other-project', server['tenant_id'])
        self._start_compute('host1')

        resp = self._rebuild(server['id'])

        self.assertEqual(202, resp.status, resp.body)
        active = self._wait_for_state_change(resp.body['server'], 'ACTIVE')
        self.assertEqual(server['id'], active['id'])
        self.assertEqual(self.cell_mappings['cell1'].uuid,
                         self._mapped_cell_uuid(server['id']))
