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
* the server is deleted, in the DELETE's own request once Nova deleted it
  (what Nova keeps of a deleted server, its history is part of, and
  ``nova-manage db archive_deleted_rows`` moves it to the shadow tables
  with the server); the DELETE's one look-up of the server says whether
  it has a stash (:func:`whereabouts`);
* purge runs, for a server in a cell (:func:`write_back_or_keep`);
* a new move of the server starts (before its history is read again);
* the server is buried in cell0 again by the plugin (in the same cell0
  transaction as the burial).

The conductor's 'create' action of the rebuild is renamed 'rebuild' then.
"""

import dataclasses

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_deleted_servers as deleted_servers
from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import objects

LOG = logging.getLogger(__name__)


def whereabouts(admin, instance_uuid):
    """Where Nova keeps a server, and whether it has a stash (Whereabouts).

    One indexed statement when the plugin's tables share the API
    database: the stash table is joined in the look-up of the mapping.
    With a database of their own, a server in a real cell costs a second
    indexed look-up, on the stash table.

    :returns: a Whereabouts, or None for a server with no mapping.
    """
    table = objects.ServerHistory.table_in_api_database()
    found = nova_servers.where_is(admin, [instance_uuid],
                                  stash=table).get(instance_uuid)
    if found is not None and table is None and found.in_real_cell:
        stashed = objects.ServerHistory.get_by_instance_uuid(
            admin, instance_uuid) is not None
        found = dataclasses.replace(found, stashed=stashed)
    return found


def materialise(admin, instance_uuid, reader=None, deleted_only=False):
    """Write a server's stashed history into the cell it is mapped to.

    One indexed SELECT when the server has no stash. The stash goes once
    the history is complete there (the conductor's action of the rebuild
    included).

    :param reader: the caller's context: only a caller Nova's policy lets
        list the server's actions causes a write.
    :param deleted_only: write only if Nova's delete queued the server's
        mapping: after a DELETE Nova answered 204, that proves it deleted
        something (an instance with termination disabled is answered 204
        too, untouched).
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
    if deleted_only and not mapping.queued_for_delete:
        LOG.warning('Nova answered the DELETE of server %s with 204 but did '
                    'not delete it (termination disabled?): its history '
                    'stays stashed', instance_uuid)
        return False
    return _write_back(admin, stash, mapping)


def _write_back(admin, stash, mapping):
    cell_mapping = mapping.cell_mapping
    complete = nova_instance_history.materialise(
        admin, cell_mapping, stash.instance_uuid, stash.history,
        request_id=stash.request_id,
        deleted=bool(mapping.queued_for_delete))
    if complete:
        stash.destroy()
        LOG.debug('History of server %s written back into cell %s',
                  stash.instance_uuid, cell_mapping.name)
    return complete


def keep_deleted(admin, instance_uuid):
    """Keep the history of a server deleted before it reached a cell.

    Nova keeps a deleted server's row and history until archive moves them
    to the shadow tables. A server deleted while its move held it as a
    BuildRequest has no row anywhere: it gets the one Nova's delete would
    have left, in cell0, soft-deleted, with the stashed history; the stash
    then goes. Only for a server deleted with no instance row in a cell
    (``nova_deleted_servers.forget_deleted_server`` said so).
    """
    stash = objects.ServerHistory.get_by_instance_uuid(admin, instance_uuid)
    if stash is None:
        # No history to keep: a live cell0 row a stopped move left (if
        # any) is soft-deleted, as Nova's delete would have.
        deleted_servers.keep_in_cell0(admin, cell0_rows.get_cell0(admin),
                                      instance_uuid, None)
    elif _keep_deleted_stash(admin, stash):
        LOG.info('Server %s was deleted before it reached a cell: it is '
                 'kept deleted in cell0 with its history, for archive',
                 instance_uuid)
    else:
        LOG.warning('Server %s was deleted before it reached a cell, and '
                    'its stashed history names no instance to keep it '
                    'with: the stash is kept', instance_uuid)


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


def stash_in_move(admin, build_request, request_id, history, also=None):
    """A callable for the move's API-database transaction.

    It stashes *history* with the instance written to *build_request*
    (joining that transaction when the plugin's tables share the API
    database), then calls *also*. The instance is what a server deleted
    as that BuildRequest is kept as, deleted, in cell0
    (:func:`keep_deleted`): Nova's delete removes the BuildRequest.
    """
    instance = build_request.instance

    def _stash():
        objects.ServerHistory.stash(
            admin, instance.uuid, instance.project_id,
            dict(history, instance=instance.obj_to_primitive()),
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


def _changed_before(stash, before):
    stamp = stash.updated_at or stash.created_at
    return before is None or (stamp is not None and
                              stamp.replace(tzinfo=None) < before)


def write_back_or_keep(admin, page=200, dry_run=False, before=None):
    """Write back the stashes of servers in a cell; list those kept.

    For purge: a stash is only ever forgotten once written back. A server
    in a real cell, or deleted in cell0, gets its history now (so that
    ``nova-manage db archive_deleted_rows`` moves it to the shadow tables
    with the server, even for a server deleted without passing through
    the plugin). A server still moving or waiting keeps its stash. A
    server deleted with no instance row in a cell (its mapping gone, or
    queued for delete with no cell), whose DELETE could not keep its
    history, is kept deleted in cell0 with it now (:func:`keep_deleted`);
    only a stash of an older release, which names no instance to keep it
    with, is kept and reported.

    :param dry_run: write nothing; list what would be written back.
    :param before: a naive UTC datetime: only stashes last changed before
        it (purge's ``--before``); None for all.
    :returns: (instance uuids written back, instance uuids of stashes
        whose server has no mapping any more and that are kept).
    """
    written, unmapped = [], []
    marker = None
    while True:
        stashes = objects.ServerHistory.list_page(admin, marker=marker,
                                                  limit=page)
        if not stashes:
            return written, unmapped
        for stash in stashes:
            if not _changed_before(stash, before):
                continue
            mapping = nova_servers.get_mapping(admin, stash.instance_uuid)
            if _deleted_without_cell(mapping):
                if dry_run or _keep_deleted_stash(admin, stash):
                    written.append(stash.instance_uuid)
                else:
                    unmapped.append(stash.instance_uuid)
            elif mapping.cell_mapping is not None and (
                    mapping.queued_for_delete or
                    not nova_servers.is_cell0(mapping.cell_mapping)):
                if dry_run or _write_back(admin, stash, mapping):
                    written.append(stash.instance_uuid)
        marker = stashes[-1].id


def _deleted_without_cell(mapping):
    return mapping is None or (mapping.cell_mapping is None and
                               bool(mapping.queued_for_delete))


def _keep_deleted_stash(admin, stash):
    if not deleted_servers.keep_in_cell0(
            admin, cell0_rows.get_cell0(admin), stash.instance_uuid,
            stash.history):
        return False
    stash.destroy()
    return True
