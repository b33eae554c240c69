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

"""Adapter for a server's rows in Nova's cell0 database.

A move claims the cell0 instance (a task state set by compare-and-swap),
hard-deletes its rows once they are copied, but only while they still hold
what was copied, and an undo that comes after that delete writes them
again (:func:`bury_again`); each in one cell0 transaction.
"""

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import exception as nova_exception
from nova import objects as nova_objects
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_build_requests as build_requests
from nova_cell0_rebuild.adapters import nova_copied_content as copied_content
from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.adapters import nova_move_fields as move_fields
from nova_cell0_rebuild.adapters import nova_servers

#: The task state that claims a cell0 instance while it is moved: the
#: one Nova sets for a rebuild, so Nova's API refuses what it refuses
#: during one (a second rebuild, forceDelete).
CLAIM = task_states.REBUILDING


def get_cell0(context):
    """Nova's cell0, as its CellMapping."""
    return nova_objects.CellMapping.get_by_uuid(
        context, nova_objects.CellMapping.CELL0_UUID)


def claim(context, cell0, instance, task_state):
    """Set a task state on the cell0 instance if it has none (CAS).

    :raises: UnexpectedTaskStateError if another task holds it.
    """
    # One conditional UPDATE: Instance.save() would read the whole
    # instance back with its joins, and write fields nobody changed.
    with nova_context.target_cell(context, cell0) as cctxt:
        with main_db_api.get_context_manager(cctxt).writer.using(
                cctxt) as session:
            claimed = session.query(main_models.Instance).filter_by(
                uuid=instance.uuid, task_state=None, deleted=0).update(
                    {'task_state': task_state,
                     'updated_at': timeutils.utcnow()},
                    synchronize_session=False)
    if claimed != 1:
        raise nova_exception.UnexpectedTaskStateError(
            instance_uuid=instance.uuid, expected=[None],
            actual='another task')
    instance.task_state = task_state
    instance.obj_reset_changes(['task_state'])


def release(context, cell0, instance_uuid, task_state):
    """Clear a claim made by :func:`claim`, if it still holds (CAS).

    Heal fences a move off with it: once released, the move's hard delete
    (conditional on the claim) finds nothing to delete.

    :returns: whether the live cell0 instance was claimed and is released.
    """
    with nova_context.target_cell(context, cell0) as cctxt:
        with main_db_api.get_context_manager(cctxt).writer.using(
                cctxt) as session:
            released = session.query(main_models.Instance).filter_by(
                uuid=instance_uuid, task_state=task_state,
                deleted=0).update(
                    {'task_state': None, 'updated_at': timeutils.utcnow()},
                    synchronize_session=False)
    return released == 1


# What Nova's own hard delete (nova.db.main.api.instance_destroy with
# hard_delete=True) removes, by the column naming the instance; functional
# tests check that no cell0 table keeps a row of a rebuilt server.
_ROWS_OF_INSTANCE = (
    (main_models.SecurityGroupInstanceAssociation, 'instance_uuid'),
    (main_models.InstanceInfoCache, 'instance_uuid'),
    (main_models.InstanceMetadata, 'instance_uuid'),
    (main_models.InstanceFault, 'instance_uuid'),
    (main_models.InstanceExtra, 'instance_uuid'),
    (main_models.InstanceSystemMetadata, 'instance_uuid'),
    (main_models.BlockDeviceMapping, 'instance_uuid'),
    (main_models.Migration, 'instance_uuid'),
    (main_models.VirtualInterface, 'instance_uuid'),
    (main_models.InstanceIdMapping, 'uuid'),
    (main_models.Tag, 'resource_id'),
    (main_models.ConsoleAuthToken, 'instance_uuid'),
)


def destroy_cell0_instance(context, cell0, instance, task_state=None,
                           copied=None, history=None):
    """Hard-delete every cell0 row of the instance, in one transaction.

    Hard, not soft: soft-deleted rows would later make ``nova-manage db
    archive_deleted_rows`` delete the mapping and RequestSpec of the
    server that by then lives in another cell. The rows Nova's own hard
    delete removes, without its read of the whole instance first.

    :param task_state: delete only while the instance still has this task
        state (the move's claim).
    :param copied: delete only while the instance row holds what this
        instance (as the move read and copied it) holds: a write Nova
        accepted since (a rename, a lock and its reason, a reset of its
        state, a cleared password) is never deleted with the rows. Its
        columns and system_metadata are compared in the DELETE statements
        (nova_copied_content), so it costs no statement.
    :param history: with *copied*: the history the move stashed; an action
        Nova recorded since is not deleted either.
    :returns: whether the instance was there to delete (with *task_state*
        or *copied* given, still claimed and unchanged); if not, nothing is
        deleted.
    """
    uuid = instance.uuid
    with nova_context.target_cell(context, cell0) as cctxt:
        try:
            with main_db_api.get_context_manager(cctxt).writer.using(
                    cctxt) as session:
                for model, column in _ROWS_OF_INSTANCE:
                    query = session.query(model).filter(
                        getattr(model, column) == uuid)
                    if model is main_models.InstanceExtra and (
                            copied is not None):
                        # One row per instance, deleted before the
                        # system_metadata and history rows: its DELETE
                        # carries their compare-and-swap.
                        query = query.filter(*copied_content.rest_unchanged(
                            session, uuid, _copied_system_metadata(copied),
                            history))
                        if query.delete(synchronize_session=False) != 1:
                            raise _NotDeleted()
                        continue
                    query.delete(synchronize_session=False)
                actions = session.query(main_models.InstanceAction.id).filter(
                    main_models.InstanceAction.instance_uuid == uuid)
                session.query(main_models.InstanceActionEvent).filter(
                    main_models.InstanceActionEvent.action_id.in_(
                        actions.scalar_subquery())).delete(
                            synchronize_session=False)
                session.query(main_models.InstanceAction).filter_by(
                    instance_uuid=uuid).delete(synchronize_session=False)
                query = session.query(main_models.Instance).filter_by(
                    uuid=uuid, deleted=0)
                if task_state is not None:
                    query = query.filter_by(task_state=task_state)
                if copied is not None:
                    query = query.filter(
                        *copied_content.instance_row_unchanged(
                            session, copied, COMPARED_COLUMNS))
                if query.delete(synchronize_session=False) != 1:
                    # Rolls the other deletes back with the transaction.
                    raise _NotDeleted()
        except _NotDeleted:
            return False
    return True


#: Columns of Nova's instances table a move copies and that Nova's API can
#: write while the server is in cell0 (see doc/source/admin/
#: concurrent-edits.rst): the update (name, description, hostname), lock
#: and unlock, reset-state, and what an admin may change directly.
COMPARED_COLUMNS = copied_content.compared_columns(
    move_fields.INSTANCE_COPIED)


def _copied_system_metadata(copied):
    if copied.obj_attr_is_set('system_metadata'):
        return copied.system_metadata
    return None


class _NotDeleted(Exception):
    pass


def bury_again(context, cell0, build_request, fault_message,
               history=None, fence=None):
    """Put a server whose move failed back in cell0, in ERROR, as it was.

    What the conductor's burial does, for a move that lost its cell0 rows
    before the conductor was reached: the instance is written to cell0 from
    its BuildRequest with its BDMs, tags, history and the faults it was
    buried with, all in one cell0 transaction (a crash midway leaves
    nothing there, and the BuildRequest still holds it all), then its
    mapping points at cell0 again and the BuildRequest goes.

    Two undos of one move may overlap (one slower than its lease, and heal
    that took the lease over). The cell0 row is unique, written whole by
    the first; a second adopts it. An undo whose remap is refused removes
    the row it wrote only when that row can never be the server's home:
    the server is deleted or lives in a real cell. A mapping to cell0 means
    another undo adopted the row; a mapping to no cell means the lease's
    holder still decides, and adopts the row when it sees it.

    :param history: the server's stashed cell0 history
        (nova_instance_history.read); without it, a fault made of
        *fault_message* stands for the one it was buried with.
    :param fence: called in the remap's transaction; it raises to refuse
        the remap (the caller lost its lease).
    :returns: whether this call mapped the server to its cell0 row.
    :raises: what *fence* raises, once the row is dealt with.
    """
    instance = build_request.get_new_instance(context)
    instance.vm_state = vm_states.ERROR
    instance.task_state = None
    wrote = True
    try:
        with nova_context.target_cell(context, cell0) as cctxt:
            # Nova's own writes below join this transaction: same context.
            with main_db_api.get_context_manager(cctxt).writer.using(
                    cctxt) as session:
                _write_buried(cctxt, session, instance, build_request,
                              fault_message, history, cell0)
    except db_exc.DBDuplicateEntry:
        # Another undo of this move wrote it, whole: adopt it.
        wrote = False
    try:
        build_requests.remap_to_cell0_and_drop_build_request(
            context, instance.uuid, cell0.id, fence=fence)
    except Exception:
        if wrote and _never_home(context, instance.uuid):
            destroy_cell0_instance(context, cell0, instance)
        raise
    return True


def _never_home(context, instance_uuid):
    """Whether a cell0 row of the server can never become its home."""
    mapping = nova_servers.get_mapping(context, instance_uuid)
    if mapping is None:
        return True
    if mapping.cell_mapping is None:
        # Queued for delete: Nova deleted its BuildRequest, not this row.
        return bool(mapping.queued_for_delete)
    return not nova_servers.is_cell0(mapping.cell_mapping)


def _write_buried(cctxt, session, instance, build_request, fault_message,
                  history, cell0):
    instance._context = cctxt
    instance.create()
    for bdm in build_requests.clone_bdms(build_request.block_device_mappings):
        bdm._context = cctxt
        bdm.instance_uuid = instance.uuid
        bdm.create()
    nova_objects.TagList.create(
        cctxt, instance.uuid, [tag.tag for tag in build_request.tags])
    if history:
        nova_instance_history.restore(session, instance.uuid, history,
                                      cell=cell0)
    if history and history.get('faults'):
        return
    # A move stashed by an older release: its fault message only.
    nova_objects.InstanceFault(
        cctxt, instance_uuid=instance.uuid, code=500,
        message=fault_message or '', details='', host=None).create()
