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

"""Policy rules of waits: who may have a buried server wait for room.

Which projects may wait at all is configuration (``[cell0_rebuild_pending]
enabled`` and ``projects``); these rules decide who in such a project may
opt a server in or out. The opt-in is checked with the caller's token, at
create (the ``cell0_rebuild:wait`` metadata key) or at ``PUT``: the service
that later rebuilds the server has no user token to check a rule with.
"""

from oslo_policy import policy

from nova_cell0_rebuild.policies import rebuild

WAIT = 'cell0_rebuild:cell0_servers:wait'
CANCEL = 'cell0_rebuild:cell0_servers:wait:cancel'

PATH = '/os-cell0-rebuild/servers/{server_id}/wait'

rules = [
    policy.DocumentedRuleDefault(
        name=WAIT,
        # As cell0_rebuild:servers:rebuild_from_cell0: a wait ends in a
        # rebuild from cell0, so whoever may ask for the one may ask for
        # the other.
        check_str=rebuild.PROJECT_MEMBER_OR_ADMIN,
        description=(
            'Have a server buried in cell0 wait for room, to be rebuilt '
            'from cell0 automatically when capacity is freed, until a '
            'deadline. Checked at create, for the cell0_rebuild:wait '
            'metadata key (a refusal is recorded and the create goes on '
            'as without the key), and for PUT on the wait of a buried '
            'server. The rebuild itself is done later by the service '
            'without the user\'s token: this rule is the user\'s consent '
            'to it, so it has the audience of ' +
            rebuild.REBUILD_FROM_CELL0 + '.'),
        operations=[
            {'method': 'PUT', 'path': PATH},
            {'method': 'POST', 'path': '/servers (metadata '
                                       'cell0_rebuild:wait)'},
        ],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=CANCEL,
        check_str=rebuild.PROJECT_MEMBER_OR_ADMIN,
        description=(
            'End the wait of a server buried in cell0, so that it is no '
            'longer rebuilt automatically (the wait ends as cancelled; '
            'the server stays buried). The same audience as ' + WAIT +
            ': whoever may start a wait may end it.'),
        operations=[{'method': 'DELETE', 'path': PATH}],
        scope_types=['project']),
]


def list_rules():
    return rules
