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

"""Writes refused while a move of ours holds the server unbuilt.

Between its BuildRequest and the conductor's instance in a cell, a server
moving out of cell0 is, as during Nova's own create, a BuildRequest with no
cell. Nova's lock, unlock and reset-state then load the instance the
BuildRequest holds and save it: ``OrphanedObjectError``, a 500, after Nova
recorded the action. Nova's update (``PUT /servers/{id}``: name,
description, hostname) saves the BuildRequest and answers 200, but the
conductor builds from the BuildRequest it was cast, so a rename saved after
the move's last read of it is lost (Nova's FIXME in
``compute.api.API.update_instance``). Nova's create window lasts
milliseconds; a move's lasts seconds (Glance, Cinder, Neutron, then the
conductor). While a move of ours holds the server so, from its BuildRequest
until the conductor built it in a cell, the filter answers these writes as
Nova answers a write a task state refuses: 409, nothing written
(doc/source/admin/concurrent-edits.rst). A server that is a BuildRequest of
Nova's own create is left to Nova.
"""

from oslo_db import exception as db_exc

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import rebuild_refusals
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import move_journal

#: The action keys (Nova's API) refused while a move holds a BuildRequest.
REFUSED = frozenset(['lock', 'unlock', 'os-resetState'])
#: What :func:`refuse_while_moving` calls ``PUT /servers/{id}``.
UPDATE = 'update'
#: A move that holds the server unbuilt: under way, or handed to the
#: conductor (which has not built it while the mapping has no cell).
_HOLDING = (move_journal.Status.IN_PROGRESS, move_journal.Status.DONE)

_HELD = _("Cannot '%(action)s' instance %(uuid)s while it is in task_state "
          "scheduling: it is being rebuilt from cell0.")


def refuse_while_moving(context, server_id, action):
    """Refuse *action* while a move of ours holds the server unbuilt.

    Two indexed reads (the mapping, then the journal only for a server
    with no cell), and only for :data:`UPDATE` and the actions in
    :data:`REFUSED`.

    :param action: :data:`UPDATE`, or the key of an action body.
    :raises: RequestRefused: 409 while a move holds the server; 503 or 409
        when the reads lose the database (a Galera writer failing over),
        which would otherwise reach Nova's faultwrap as a 500.
    """
    if (action != UPDATE and action not in REFUSED) or context is None:
        return
    try:
        held = _held_by_a_move(context, server_id)
    except (db_exc.DBConnectionError, db_exc.DBDeadlock) as error:
        raise rebuild_refusals.database_refusal(server_id, error, action)
    if held:
        raise exception.RequestRefused(409, _HELD % {'action': action,
                                                     'uuid': server_id})


def _held_by_a_move(context, server_id):
    """Whether a move of ours holds the caller's server unbuilt."""
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, server_id)
    if mapping is None or mapping.cell_mapping is not None or (
            mapping.queued_for_delete):
        return False
    if not context.is_admin and mapping.project_id != context.project_id:
        return False  # another project's server: Nova's 404, not our 409
    journal = objects.MoveJournal.get_by_instance_uuid(admin, server_id)
    return journal is not None and journal.status in _HOLDING
