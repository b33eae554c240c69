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

"""Policy rules for rebuilding a server from cell0."""

from oslo_policy import policy

REBUILD_FROM_CELL0 = 'cell0_rebuild:servers:rebuild_from_cell0'

# Same audience as Nova's own os_compute_api:servers:rebuild: a member of
# the server's project, or an admin.
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'

rules = [
    policy.DocumentedRuleDefault(
        name=REBUILD_FROM_CELL0,
        check_str=PROJECT_MEMBER_OR_ADMIN,
        description=(
            'Rebuild a server that Nova buried in cell0 after its create '
            'failed to schedule, so that it is scheduled again and keeps its '
            'UUID. This is checked in addition to Nova\'s own '
            'os_compute_api:servers:rebuild rule.'),
        operations=[{
            'method': 'POST',
            'path': '/servers/{server_id}/action (rebuild)',
        }],
        scope_types=['project']),
]


def list_rules():
    return rules
