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

"""Every refusal of a rebuild from cell0, through Nova's real API.

A refusal answers with a Nova-style fault and changes nothing: the server
stays in ERROR in cell0, exactly as it was.
"""

import eventlet
from nova.conductor import manager as conductor_manager
from nova import context as nova_context
from nova.limit import local as local_limit
from nova import objects as nova_objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client
from oslo_db import exception as db_exc
from oslo_limit import fixture as limit_fixture

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.tests.functional import base

CELL0 = '00000000-0000-0000-0000-000000000000'
ORIGINAL_SCHEDULE = conductor_manager.ComputeTaskManager._schedule_instances


def _database_away(*args, **kwargs):
    raise db_exc.DBConnectionError()


class _RefusalTestCase(base.Cell0RebuildTestCase):

    def _assert_refused(self, server, status, fault_name, *phrases,
                        api=None, body=None):
        rows = self._cell0_rows(server['id'])
        before = self.admin_api.get_server(server['id'])
        resp = self._rebuild(server['id'], body, api=api)
        self.assertEqual(status, resp.status, resp.body)
        fault = resp.body[fault_name]
        self.assertEqual(status, fault['code'])
        for phrase in phrases:
            self.assertIn(phrase, fault['message'])
        after = self.admin_api.get_server(server['id'])
        self.assertEqual(before, after)
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))
        self.assertEqual(rows, self._cell0_rows(server['id']))
        return fault['message']


class GateRefusalTest(_RefusalTestCase):

    def test_state_gate_refuses_a_server_with_a_task(self):
        server = self._create_buried_server()
        with nova_context.target_cell(self.admin_context,
                                      self._cell0()) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(cctxt, server['id'])
            instance.task_state = 'rebuilding'
            instance.save()
        self._assert_refused(server, 409, 'conflictingRequest',
                             "invalid state for 'rebuild'",
                             'task rebuilding is in progress')

    def test_lock_gate_refuses_the_owner_not_an_admin(self):
        server = self._create_buried_server()
        self.api.post_server_action(server['id'], {'lock': {}})
        self._assert_refused(server, 409, 'conflictingRequest', 'is locked')
        self._start_compute('host1')
        resp = self._rebuild(server['id'], api=self.admin_api)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_fault_gate_refuses_other_burial_reasons(self):
        # A host whose mapping is missing: the scheduler picks it and the
        # conductor buries the server because the host is in no cell.
        self._start_compute('host1')
        nova_objects.HostMapping.get_by_host(self.admin_context,
                                             'host1').destroy()
        server = self._create_buried_server()
        self.assertIn('not mapped to any cell', server['fault']['message'])
        self._assert_refused(server, 409, 'conflictingRequest',
                             'not buried in cell0 for lack of a valid host',
                             'not mapped to any cell')

    def test_fault_gate_lets_a_database_outage_burial_through(self):
        # The conductor's database fails over while it schedules: Nova
        # buries the server with the exception's class name as its fault
        # (a rebuild's own hand-off too, as the Galera job's writer kill
        # showed). The server is not the problem: it is rebuilt.
        self._start_compute('host1')
        self.stub_out('nova.conductor.manager.ComputeTaskManager.'
                      '_schedule_instances', _database_away)
        server = self._create_buried_server()
        self.assertEqual('DBConnectionError', server['fault']['message'])
        self.stub_out('nova.conductor.manager.ComputeTaskManager.'
                      '_schedule_instances', ORIGINAL_SCHEDULE)
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        rebuilt = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(server['id'], rebuilt['id'])

    def test_record_gate_refuses_unrecorded_servers(self):
        server = self._create_buried_server()
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).delete()
        self._assert_refused(server, 409, 'conflictingRequest',
                             'before nova-cell0-rebuild recorded')
        self.flags(allow_unrecorded=True, group='cell0_rebuild')
        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_quota_gate_refuses_a_project_over_quota(self):
        server = self._create_buried_server()
        self.admin_api.api_put(
            '/os-quota-sets/%s' % self.api.project_id,
            {'quota_set': {'instances': 0, 'force': True}})
        self._assert_refused(server, 403, 'forbidden', 'Quota exceeded',
                             'instances')

    def test_quota_refusal_says_what_the_project_uses(self):
        server = self._create_buried_server()
        self._create_buried_server(name='other')
        ram = self._cell0_instance(server['id']).flavor.memory_mb
        # Both buried servers count (legacy counting includes cell0): one
        # MB short of room for this one beside the other.
        self.admin_api.api_put(
            '/os-quota-sets/%s' % self.api.project_id,
            {'quota_set': {'ram': 2 * ram - 1, 'force': True}})
        self._assert_refused(
            server, 403, 'forbidden',
            'Quota exceeded for ram: Requested %d, but already used %d of '
            '%d ram' % (ram, ram, 2 * ram - 1))

    def test_concurrent_rebuilds_one_wins(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        casts = self._record_casts()
        pool = eventlet.GreenPool(16)
        results = list(pool.imap(
            lambda _: self._rebuild(server['id']).status, range(16)))
        self.assertEqual([202] + [409] * 15, sorted(results))
        self._wait_for_state_change(server, 'ACTIVE')
        # One server built, once.
        self.assertEqual([server['id']], casts)
        self.assertEqual(1, len(self.api.get_servers()))


class UnifiedLimitsQuotaTest(_RefusalTestCase):
    """The quota gate with Keystone's unified limits, as Nova checks them.

    Nova 34 counts a RequestSpec's resources, older releases a flavor's:
    the gate asks whichever the installed Nova has.
    """

    _GENEROUS = {'servers': 10, 'class:VCPU': 100,
                 'class:MEMORY_MB': 100000, 'class:DISK_GB': 1000}

    def setUp(self):
        super().setUp()
        self.flags(driver='nova.quota.UnifiedLimitsDriver', group='quota')
        registered = dict(self._GENEROUS, **{
            local_limit.SERVER_METADATA_ITEMS: 128,
            local_limit.INJECTED_FILES: 5,
            local_limit.INJECTED_FILES_CONTENT: 10 * 1024,
            local_limit.INJECTED_FILES_PATH: 255,
            local_limit.KEY_PAIRS: 100,
            local_limit.SERVER_GROUPS: 10,
            local_limit.SERVER_GROUP_MEMBERS: 10})
        self.limits = self.useFixture(
            limit_fixture.LimitFixture(registered, {}))

    def _limit(self, project_limits):
        """Keystone's limits of the project, read at each check."""
        self.limits.projlimits = {self.api.project_id: project_limits}

    def test_a_project_over_its_ram_limit_is_refused(self):
        server = self._create_buried_server()
        ram = self._cell0_instance(server['id']).flavor.memory_mb
        # The buried server holds nothing in placement yet: its RAM is
        # what the rebuild would add.
        self._limit(dict(self._GENEROUS, **{'class:MEMORY_MB': ram - 1}))
        # What Nova's create answers: oslo.limit's words.
        self._assert_refused(server, 403, 'forbidden', 'is over a limit',
                             'class:MEMORY_MB is over limit of %d' % (ram - 1))

    def test_a_project_within_its_limits_is_rebuilt(self):
        server = self._create_buried_server()
        # One server: the buried one already counts as a server.
        self._limit(dict(self._GENEROUS, servers=1))
        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')


class RequestRefusalTest(_RefusalTestCase):
    """Authorization and validation, answered as Nova answers them."""

    def setUp(self):
        super().setUp()
        # PlacementFixture turned the new defaults off (harness-notes.md),
        # and rules are resolved when loaded: reload them with them on.
        self._enforce_new_policy_defaults()

    def _client(self, user, project, roles):
        return api_client.TestOpenStackClient(
            user, self.api.base_url.rsplit('/', 1)[0] + '/v2.1',
            project_id=project, roles=roles)

    def test_other_project_gets_nova_404(self):
        server = self._create_buried_server()
        other = self._client('other', 'other-project', ['member'])
        self._assert_refused(server, 404, 'itemNotFound',
                             'Instance %s could not be found.'
                             % server['id'], api=other)

    def test_reader_gets_403(self):
        server = self._create_buried_server()
        reader = self._client('reader', self.api.project_id, ['reader'])
        self._assert_refused(server, 403, 'forbidden',
                             'os_compute_api:servers:rebuild', api=reader)

    def test_plugin_rule_is_enforced_after_novas(self):
        server = self._create_buried_server()
        self.policy.set_rules({
            'cell0_rebuild:servers:rebuild_from_cell0': '!'},
            overwrite=False)
        self._assert_refused(server, 403, 'forbidden',
                             'cell0_rebuild:servers:rebuild_from_cell0')

    def test_bad_bodies_get_400(self):
        server = self._create_buried_server()
        for body, phrase in (
                ({'imageRef': self.image_id, 'bogus': 1},
                 'Additional properties are not allowed'),
                ({'imageRef': self.image_id, 'personality': []},
                 'Additional properties are not allowed'),
                ({'imageRef': 'not-an-image'}, 'imageRef'),
                ({'imageRef': nova_fixtures.CinderFixture.IMAGE_BACKED_VOL},
                 'Cannot find image for rebuild'),
                ({'imageRef': self.image_id, 'key_name': 'nope'},
                 'Invalid key_name provided.'),
                ({'imageRef': self.image_id, 'name': ''}, 'name'),
                ({}, 'imageRef')):
            self._assert_refused(server, 400, 'badRequest', phrase,
                                 body=body)
