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

"""What the filter adds to nova-api requests, counted in SQL statements.

The filter sits in front of every request of a cloud, so its cost is paid
by every user. A statement is the filter's when it is issued from the
filter's code and not from inside Nova's API application, which the filter
calls; statements of Nova's own handling, and of the conductor and
computes, are not counted. A statement issued by the plugin outside any
request (a background thread) is counted separately: there must be none.
"""

import os
import sys

from nova.tests.functional.api import client as api_client
import sqlalchemy as sa

from nova_cell0_rebuild.tests.functional import base

_FILTER = os.path.join('nova_cell0_rebuild', 'api', 'filter.py')
_PLUGIN = 'nova_cell0_rebuild' + os.sep
_TESTS = os.path.join('nova_cell0_rebuild', 'tests', '')
_NOVA_API = os.path.join('nova', 'api', 'openstack', '')
_TRANSACTION = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE')


def _issuer(frame):
    """'filter', 'nova', 'background' (plugin code, no request) or None."""
    plugin = False
    while frame is not None:
        name = frame.f_code.co_filename
        if _NOVA_API in name:
            return 'nova'
        if _FILTER in name:
            return 'filter'
        if _PLUGIN in name and _TESTS not in name:
            plugin = True
        frame = frame.f_back
    return 'background' if plugin else None


class RequestCostTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.statements = {'filter': [], 'background': []}

        def record(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith(_TRANSACTION):
                return  # SQLite's explicit BEGIN: a marker, no query
            issuer = _issuer(sys._getframe(1))
            if issuer in self.statements:
                self.statements[issuer].append(statement)
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', record)

    def _filter_statements(self, request):
        """The statements the filter issued while *request* ran."""
        before = len(self.statements['filter'])
        request()
        return self.statements['filter'][before:]

    def _active_server(self):
        self._start_compute('host1')
        server = self._build_server(image_uuid=self.image_id,
                                    networks='none')
        return self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE')

    def test_reads_cost_nothing(self):
        buried = self._create_buried_server()
        active = self._active_server()
        for server in (buried, active):
            self.assertEqual([], self._filter_statements(
                lambda: self.api.get_server(server['id'])))
        self.assertEqual([], self._filter_statements(
            lambda: self.api.get_servers()))
        self.assertEqual([], self._filter_statements(
            lambda: self.api.get_servers(detail=False)))
        self.assertEqual([], self.statements['background'])

    def test_delete_of_a_server_in_a_cell_costs_one_lookup(self):
        server = self._active_server()
        statements = self._filter_statements(
            lambda: self.api.delete_server(server['id']))
        self.assertEqual(1, len(statements), statements)
        self.assertTrue(statements[0].lstrip().upper().startswith('SELECT'))
        self._wait_until_deleted(server)
        # An unknown server: the same single look-up, and Nova's 404.
        unknown = '9a1f0c2e-5b7d-4e8a-b3c6-0d2e4f6a8b1c'
        statements = self._filter_statements(lambda: self.assertRaises(
            api_client.OpenStackApiNotFoundException,
            self.api.delete_server, unknown))
        self.assertEqual(1, len(statements), statements)
        self.assertEqual([], self.statements['background'])

    def test_actions_on_a_server_in_a_cell(self):
        server = self._active_server()
        # An action that is not a rebuild: nothing.
        self.assertEqual([], self._filter_statements(
            lambda: self.api.post_server_action(server['id'],
                                                {'os-stop': None})))
        self._wait_for_state_change(server, 'SHUTOFF')
        # A rebuild at the plugin's microversion: the mapping, once.
        statements = self._filter_statements(lambda: self._rebuild(
            server['id']))
        self.assertEqual(1, len(statements), statements)

    def test_a_single_create_costs_two_writes_and_nothing_after(self):
        statements = self._filter_statements(
            self._create_buried_server)
        self.assertEqual(['INSERT', 'UPDATE'],
                         [s.lstrip().split()[0].upper() for s in statements])
        # The server was buried since: nothing of ours ran meanwhile.
        self.assertEqual([], self.statements['background'])
