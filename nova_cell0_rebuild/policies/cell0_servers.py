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

"""Policy rules of the rebuildability API: who may see what is buried."""

from oslo_policy import policy

PREFIX = 'cell0_rebuild:cell0_servers:%s'
LIST = PREFIX % 'list'
LIST_ALL_PROJECTS = PREFIX % 'list:all_projects'
SHOW = PREFIX % 'show'

#: Nova's aliases, as its os_compute_api:servers:index and :show use them.
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
ADMIN = 'rule:context_is_admin'

_VERDICT = (
    'with the verdict a rebuild from cell0 would get now: whether it is '
    'rebuildable, the gate that refuses it and the refusal\'s message.')

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=PROJECT_READER_OR_ADMIN,
        description=(
            'List the servers of the caller\'s project that Nova buried in '
            'cell0, ' + _VERDICT),
        operations=[{'method': 'GET', 'path': '/os-cell0-rebuild/servers'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST_ALL_PROJECTS,
        check_str=ADMIN,
        description=(
            'List the servers buried in cell0 of every project '
            '(all_projects=True) or of another project (project_id=...). '
            'Checked in addition to ' + LIST + '.'),
        operations=[{
            'method': 'GET',
            'path': '/os-cell0-rebuild/servers?all_projects=True',
        }, {
            'method': 'GET',
            'path': '/os-cell0-rebuild/servers?project_id={project_id}',
        }],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=PROJECT_READER_OR_ADMIN,
        description='Show one server buried in cell0, ' + _VERDICT,
        operations=[{
            'method': 'GET',
            'path': '/os-cell0-rebuild/servers/{server_id}',
        }],
        scope_types=['project']),
]


def list_rules():
    return rules
