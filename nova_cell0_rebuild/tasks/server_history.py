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

"""A server's history survives its moves out of cell0.

The move reads the server's cell0 history (instance actions and events,
faults, ec2 id) under its claim and stashes it (objects.ServerHistory) in
the move's API-database transaction, before the cell0 rows are
hard-deleted. Nova's conductor cannot be taught to write it, and no thread
may follow each move, so the stash is written back lazily, idempotently,
into whatever cell the server is mapped to when it is next needed:

* a reader lists or shows the server's instance actions (the filter);
* the server is deleted (what Nova keeps of a deleted server, its history
  is part of, and archive moves it away with the server);
* a new move of the server starts (before its history is read again);
* the server is buried in cell0 again by the plugin (in the same cell0
  transaction as the burial).

The conductor's 'create' action of the rebuild is renamed 'rebuild' then.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import objects

LOG = logging.getLogger(__name__)


def materialise(admin, instance_uuid, reader=None):
    """Write a server's stashed history into the cell it is mapped to.

    One indexed SELECT when the server has no stash. The stash goes once
    the history is complete there (the conductor's action of the rebuild
    included).

    :param reader: the caller's context: only a caller Nova's policy lets
        list the server's actions causes a write.
    :returns: whether a stash was written back and deleted.
    """
    stash = objects.ServerHistory.get_by_instance_uuid(admin, instance_uuid)
    if stash is None:
        return False
    if reader is not None and not nova_instance_history.may_read_actions(
            reader, stash.project_id):
        return False
    mapping = nova_servers.get_mapping(admin, instance_uuid)
    if mapping is None or mapping.cell_mapping is None:
        # Still a BuildRequest, or gone: nothing to write into yet.
        return False
    complete = nova_instance_history.materialise(
        admin, mapping.cell_mapping, instance_uuid, stash.history,
        request_id=stash.request_id)
    if complete:
        stash.destroy()
        LOG.debug('History of server %s written back into cell %s',
                  instance_uuid, mapping.cell_mapping.name)
    return complete


def prepare(admin, cell0, instance):
    """The server's full history in cell0, read for a new move.

    Called under the move's claim: a stash left by the previous move is
    written back into cell0 first, and goes, so that the new stash holds
    it all. Nova's conductor writes the action of a server it buries
    before the server can be claimed: the rename is done then too.
    """
    stash = objects.ServerHistory.get_by_instance_uuid(admin, instance.uuid)
    if stash is not None:
        nova_instance_history.materialise(
            admin, cell0, instance.uuid, stash.history,
            request_id=stash.request_id)
        stash.destroy()
    return nova_instance_history.read(admin, cell0, instance.uuid)


def stash_in_move(admin, instance, request_id, history, also=None):
    """A callable for the move's API-database transaction.

    It stashes *history* (joining that transaction when the plugin's
    tables share the API database), then calls *also*.
    """
    def _stash():
        objects.ServerHistory.stash(admin, instance.uuid,
                                    instance.project_id, history,
                                    request_id=request_id)
        if also is not None:
            also()
    return _stash


def bury_again(admin, cell0, build_request, fault_message, fence=None):
    """:func:`.nova_cell0_rows.bury_again` with the stashed history.

    The history and its faults are restored in the burial's own cell0
    transaction; the stash goes once the server is buried.

    :param fence: as there: refuses the remap of a caller that
        lost its lease (and raises).
    """
    stash = objects.ServerHistory.get_by_instance_uuid(
        admin, build_request.instance_uuid)
    buried = cell0_rows.bury_again(
        admin, cell0, build_request, fault_message,
        history=stash.history if stash is not None else None, fence=fence)
    if stash is not None and buried:
        stash.destroy()
    return buried


def stale(admin, page=200):
    """Stashes of servers whose history nobody can read any more.

    A server archived (no mapping) or deleted before it reached a cell
    (queued for delete, no cell): Nova shows no actions for it.
    """
    marker = None
    while True:
        stashes = objects.ServerHistory.list_page(admin, marker=marker,
                                                  limit=page)
        if not stashes:
            return
        for stash in stashes:
            mapping = nova_servers.get_mapping(admin, stash.instance_uuid)
            if mapping is None or (mapping.queued_for_delete and
                                   mapping.cell_mapping is None):
                yield stash
        marker = stashes[-1].id
