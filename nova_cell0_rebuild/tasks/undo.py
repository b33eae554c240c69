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

"""Undo a move out of cell0 that stopped before the conductor got it.

One undo, fenced like the forward path, taken by whoever holds the move's
lease: the rebuild's own rollback, or heal once it took an expired lease
over. Two undos of one move may still overlap (the first slower than its
lease): each write of an undo proves the lease in the write's own
transaction, and the cell0 row an undo writes is left to the lease's
holder, so whichever undo comes second adopts what the first did.

From what is really there:

* the cell0 row exists (the move had not removed it): the BuildRequest
  goes and the mapping points at cell0 again;
* it does not: the server is buried in cell0 again from its BuildRequest,
  as the conductor would have, with its history and original fault.

The cell0 side is fenced first: releasing the claim makes a hard delete by
a move that lost its lease find nothing to delete.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_build_requests as build_requests
from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import move_states
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)

#: The task state that claims a cell0 instance while it is moved.
CLAIM = cell0_rows.CLAIM

Outcome = move_states.Outcome


def undo(admin, cell0, journal, ex):
    """Roll the move back, if this caller still holds its lease.

    :param journal: the move's MoveJournal, held by the caller.
    :param ex: why (recorded in the journal).
    :returns: Outcome.APPLIED when the server is in cell0 again and the
        journal says rolled back; LEASE_LOST when another actor holds the
        move (nothing more was done); SERVER_GONE when it was deleted;
        CHANGED_UNDERNEATH when the conductor or Nova took it meanwhile.
    """
    journal.bind(admin)
    outcome = move_states.fenced(journal, journal.heartbeat)
    if outcome is not Outcome.APPLIED:
        return outcome
    uuid = journal.instance_uuid
    released = cell0_rows.release(admin, cell0, uuid, CLAIM)
    has_rows = released or (
        nova_servers.get_cell0_instance(admin, cell0, uuid) is not None)
    build_request = build_requests.build_request_pending(admin, uuid)
    try:
        if build_request is None:
            # Mapped back to its cell0 row already (by an undo that lost
            # its lease before it finished the journal)?
            mapping = nova_servers.get_mapping(admin, uuid)
            restored = has_rows and mapping is not None and (
                not mapping.queued_for_delete) and nova_servers.is_cell0(
                    mapping.cell_mapping)
        elif has_rows:
            restored = build_requests.move_back_to_cell0(
                admin, uuid, cell0, fence=journal.heartbeat)
        else:
            restored = server_history.bury_again(
                admin, cell0, build_request, journal.fault_message,
                fence=journal.heartbeat)
    except (exception.JournalConflict, build_requests.MoveConflict):
        restored = False
    if not restored:
        return _why_not_restored(admin, journal)
    return move_states.fenced(journal, journal.finish,
                              fields.MoveStatus.ROLLED_BACK,
                              error=str(ex) or type(ex).__name__)


def _why_not_restored(admin, journal):
    outcome = move_states.why_refused(admin, journal)
    LOG.info('The undo of the move of server %s out of cell0 stopped: %s',
             journal.instance_uuid, outcome.value)
    return outcome
