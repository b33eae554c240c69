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

"""Actions Nova fails with a 500 while a move holds the server unbuilt.

Between its BuildRequest and the conductor, a server moving out of cell0
is, as during Nova's own create, a BuildRequest with no cell. Nova's lock,
unlock and reset-state then load the instance the BuildRequest holds and
save it: ``OrphanedObjectError``, a 500, after Nova recorded the action
(doc/source/admin/concurrent-edits.rst). Nova's create window lasts
milliseconds; a move's lasts seconds (Glance, Cinder, Neutron). While a
move of ours holds the server so, the filter answers these actions as Nova
answers an action a task state refuses: 409, nothing written. A server
that is a BuildRequest of Nova's own create is left to Nova.
"""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import move_journal

#: The action keys (Nova's API) refused while a move holds a BuildRequest.
REFUSED = frozenset(['lock', 'unlock', 'os-resetState'])

_HELD = _("Cannot '%(action)s' instance %(uuid)s while it is in task_state "
          "scheduling: it is being rebuilt from cell0.")


def refuse_while_moving(context, server_id, body):
    """Refuse the action of *body* while a move of ours holds the server
    unbuilt.

    Two indexed reads (the mapping, then the journal only for a server
    with no cell), and only for the actions in :data:`REFUSED`.

    :param body: the action body (api.rebuild.action_body), or None.
    :raises: RequestRefused(409).
    """
    action = next(iter(body)) if body else None
    if action not in REFUSED or context is None:
        return
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, server_id)
    if mapping is None or mapping.cell_mapping is not None or (
            mapping.queued_for_delete):
        return
    journal = objects.MoveJournal.get_by_instance_uuid(admin, server_id)
    if journal is not None and (
            journal.status == move_journal.Status.IN_PROGRESS):
        raise exception.RequestRefused(409, _HELD % {'action': action,
                                                     'uuid': server_id})
