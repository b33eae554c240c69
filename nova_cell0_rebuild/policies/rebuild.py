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
REBUILD_FROM_CELL0_REAPER = (
    'cell0_rebuild:servers:rebuild_from_cell0:reaper')

PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
#: Nova's service-to-service role. Nova 32 and newer also call it
#: rule:service_api; older releases have no such rule, so the role itself.
SERVICE_ROLE = 'role:service'

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
    policy.DocumentedRuleDefault(
        name=REBUILD_FROM_CELL0_REAPER,
        check_str=SERVICE_ROLE,
        description=(
            'Rebuild a server from cell0 at a microversion below '
            '[cell0_rebuild] min_microversion, from [cell0_rebuild] '
            'reaper_min_microversion up: the microversion a stock client '
            'or a reaper such as Aardvark sends. Checked only for rebuild '
            'requests below min_microversion, in addition to '
            'os_compute_api:servers:rebuild and ' + REBUILD_FROM_CELL0 +
            '. For a caller that holds it, a rebuild of a server that is '
            'not in cell0 (for example one a previous rebuild already '
            'moved out of cell0) is refused with 409 and never reaches '
            'Nova, so a retry never re-images a server. Callers without it '
            'get Nova\'s own answer below min_microversion. The default is '
            'Nova\'s service role (role:service). Adding admins (for '
            'example "role:service or rule:context_is_admin") lets every '
            'admin rebuild from cell0 at '
            'any microversion from reaper_min_microversion, and makes '
            'every admin rebuild below min_microversion of a server outside '
            'cell0 a 409 instead of Nova\'s rebuild; "!" turns the path '
            'off.'),
        operations=[{
            'method': 'POST',
            'path': '/servers/{server_id}/action (rebuild)',
        }],
        scope_types=['project']),
]


def list_rules():
    return rules
