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
from nova_cell0_rebuild.policies import rebuild


class TestPolicies(base.BaseTestCase):

    def test_rules_are_documented_and_project_scoped(self):
        rules = list(policies.list_rules())
        self.assertEqual([rebuild.REBUILD_FROM_CELL0,
                          rebuild.REBUILD_FROM_CELL0_REAPER,
                          'cell0_rebuild:cell0_servers:list',
                          'cell0_rebuild:cell0_servers:list:all_projects',
                          'cell0_rebuild:cell0_servers:show'],
                         [rule.name for rule in rules])
        for rule in rules:
            self.assertIsInstance(rule, oslo_policy.DocumentedRuleDefault)
            self.assertEqual(['project'], rule.scope_types)
            self.assertTrue(rule.description)
            self.assertEqual(
                'GET' if rule.name.startswith(cell0_servers.PREFIX[:-2])
                else 'POST', rule.operations[0]['method'])

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
