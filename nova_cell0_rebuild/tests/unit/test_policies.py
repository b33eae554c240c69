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

"""The plugin's policy rules, as oslo.policy sees them."""

from oslo_policy import policy as oslo_policy
from oslotest import base

from nova_cell0_rebuild import policies
from nova_cell0_rebuild.policies import cell0_servers
from nova_cell0_rebuild.policies import cell0_waits
from nova_cell0_rebuild.policies import rebuild


class TestPolicies(base.BaseTestCase):

    def test_rules_are_documented_and_project_scoped(self):
        rules = list(policies.list_rules())
        methods = {rebuild.REBUILD_FROM_CELL0: 'POST',
                   rebuild.REBUILD_FROM_CELL0_REAPER: 'POST',
                   'cell0_rebuild:cell0_servers:list': 'GET',
                   'cell0_rebuild:cell0_servers:list:all_projects': 'GET',
                   'cell0_rebuild:cell0_servers:show': 'GET',
                   'cell0_rebuild:cell0_servers:wait': 'PUT',
                   'cell0_rebuild:cell0_servers:wait:cancel': 'DELETE'}
        self.assertEqual(list(methods), [rule.name for rule in rules])
        for rule in rules:
            self.assertIsInstance(rule, oslo_policy.DocumentedRuleDefault)
            self.assertEqual(['project'], rule.scope_types)
            self.assertTrue(rule.description)
            self.assertEqual(methods[rule.name],
                             rule.operations[0]['method'])

    def test_same_audience_as_novas_rebuild(self):
        from nova.policies import servers as nova_servers_policies
        nova_rule = [r for r in nova_servers_policies.list_rules()
                     if r.name == 'os_compute_api:servers:rebuild'][0]
        ours = list(policies.list_rules())[0]
        self.assertEqual(nova_rule.check_str, ours.check_str)

    def test_reaper_rule_is_novas_service_role(self):
        # The role itself: Nova 31 and older have no rule:service_api.
        ours = {rule.name: rule for rule in policies.list_rules()}[
            'cell0_rebuild:servers:rebuild_from_cell0:reaper']
        self.assertEqual('role:service', ours.check_str)

    def test_rebuildability_api_reads_as_novas_server_reads(self):
        from nova.policies import servers as nova_servers_policies
        novas = {rule.name: rule.check_str
                 for rule in nova_servers_policies.list_rules()}
        ours = {rule.name: rule.check_str
                for rule in cell0_servers.list_rules()}
        self.assertEqual(novas['os_compute_api:servers:index'],
                         ours[cell0_servers.LIST])
        self.assertEqual(novas['os_compute_api:servers:show'],
                         ours[cell0_servers.SHOW])
        self.assertEqual(
            novas['os_compute_api:servers:index:get_all_tenants'],
            ours[cell0_servers.LIST_ALL_PROJECTS])

    def test_wait_rules_are_named_as_the_spec(self):
        self.assertEqual('cell0_rebuild:cell0_servers:wait',
                         cell0_waits.WAIT)
        self.assertEqual('cell0_rebuild:cell0_servers:wait:cancel',
                         cell0_waits.CANCEL)
        paths = {rule.name: rule.operations[0]['path']
                 for rule in cell0_waits.list_rules()}
        self.assertEqual(
            {cell0_waits.WAIT: '/os-cell0-rebuild/servers/{server_id}/wait',
             cell0_waits.CANCEL:
                 '/os-cell0-rebuild/servers/{server_id}/wait'}, paths)

    def test_wait_rules_have_the_audience_of_rebuild_from_cell0(self):
        # A wait ends in a rebuild from cell0 the service does without the
        # user's token: the opt-in is the user's consent to it.
        ours = {rule.name: rule.check_str for rule in policies.list_rules()}
        self.assertEqual('rule:project_member_or_admin',
                         ours[rebuild.REBUILD_FROM_CELL0])
        self.assertEqual(ours[rebuild.REBUILD_FROM_CELL0],
                         ours[cell0_waits.WAIT])
        self.assertEqual(ours[rebuild.REBUILD_FROM_CELL0],
                         ours[cell0_waits.CANCEL])


class TestWaitRulesEnforced(base.BaseTestCase):
    """The wait rules on an enforcer with Nova's base rules (its aliases)."""

    def setUp(self):
        super().setUp()
        from nova.policies import base as nova_policy_base
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf([], project='nova')
        self.enforcer = oslo_policy.Enforcer(conf)
        self.enforcer.register_defaults(nova_policy_base.list_rules())
        self.enforcer.register_defaults(cell0_waits.list_rules())
        self.target = {'project_id': 'p1', 'user_id': 'u1'}

    def _allowed(self, rule, roles, project_id='p1'):
        creds = {'roles': roles, 'project_id': project_id,
                 'user_id': 'u1'}
        return self.enforcer.enforce(rule, self.target, creds)

    def test_members_of_the_project_and_admins(self):
        for rule in (cell0_waits.WAIT, cell0_waits.CANCEL):
            self.assertTrue(self._allowed(rule, ['member', 'reader']))
            self.assertTrue(self._allowed(rule, ['admin'], 'other'))
            self.assertFalse(self._allowed(rule, ['reader']))
            self.assertFalse(self._allowed(rule, ['member'], 'other'))
