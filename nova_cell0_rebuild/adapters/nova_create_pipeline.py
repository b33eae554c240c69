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

"""Adapter for Nova's create pipeline: BuildRequest, mapping, conductor.

A server buried in cell0 is handed back to the very pipeline that created
it: a BuildRequest in the API database, an InstanceMapping pointing at no
cell, its RequestSpec, and the conductor's ``schedule_and_build_instances``.
"""

from nova.compute import power_state
from nova.compute import task_states
from nova.compute import vm_states
from nova.conductor import api as conductor_api
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import exception as nova_exception
from nova.network import model as network_model
from nova import objects as nova_objects
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.adapters import nova_move_fields as move_fields
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception


class MoveConflict(exception.Cell0RebuildException):
    msg_fmt = 'Instance %(uuid)s is no longer mapped to cell0.'


def clone_bdms(bdms, new_image_id=None):
    """Fresh BDM objects for a new build, every field marked as set.

    Conductor writes the BDMs it is sent with ``update_or_create()``,
    which writes only changed fields and refuses objects with an id.
    """
    clones = []
    for bdm in bdms:
        clone = nova_objects.BlockDeviceMapping()
        for field in bdm.obj_fields:
            if (field not in move_fields.BDM_DROPPED and
                    bdm.obj_attr_is_set(field)):
                setattr(clone, field, getattr(bdm, field))
        if (new_image_id is not None and clone.boot_index == 0 and
                clone.source_type == 'image'):
            clone.image_id = new_image_id
        clones.append(clone)
    return nova_objects.BlockDeviceMappingList(objects=clones)


def new_build_request(context, instance, bdms, updates, new_image_id=None):
    """A BuildRequest (not yet written) for a cell0 instance.

    :param updates: instance fields the rebuild changes.
    :param new_image_id: the new image of an image-backed server, if any.
    """
    new = nova_objects.Instance(context=context)
    for field in move_fields.INSTANCE_COPIED:
        if instance.obj_attr_is_set(field):
            setattr(new, field, getattr(instance, field))
    for field in ('metadata', 'system_metadata'):
        setattr(new, field, dict(getattr(instance, field)))
    for field, value in updates.items():
        setattr(new, field, value)
    new.vm_state = vm_states.BUILDING
    new.task_state = task_states.SCHEDULING
    new.power_state = power_state.NOSTATE
    new.progress = 0
    new.info_cache = nova_objects.InstanceInfoCache(
        instance_uuid=instance.uuid,
        network_info=network_model.NetworkInfo())
    new.security_groups = nova_objects.SecurityGroupList()
    tags = nova_objects.TagList(objects=[
        nova_objects.Tag(resource_id=instance.uuid, tag=tag.tag)
        for tag in instance.tags])
    build_request = nova_objects.BuildRequest(
        context, instance=new, instance_uuid=instance.uuid,
        project_id=instance.project_id,
        block_device_mappings=clone_bdms(bdms, new_image_id), tags=tags)
    # BuildRequest shows its own created_at as the server's: keep the
    # server's original creation time.
    build_request.created_at = instance.created_at
    return build_request


def _not_queued_for_delete():
    """The mapping is not queued for delete, as Nova's queries read it.

    NULL is "not queued" too: mappings written before Nova's
    ``queued_for_delete`` online data migration keep NULL until
    ``nova-manage db online_data_migrations`` runs (see
    ``InstanceMappingList.get_not_deleted_by_cell_and_project``).
    """
    column = api_models.InstanceMapping.queued_for_delete
    return sa.or_(column.is_(None), column == sa.false())


@api_db_api.context_manager.writer
def _write_build_request_and_unmap(context, build_request, cell_id,
                                   request_spec, also):
    build_request.create()
    unmapped = context.session.query(api_models.InstanceMapping).filter_by(
        instance_uuid=build_request.instance_uuid, cell_id=cell_id).filter(
            _not_queued_for_delete()).update(
                {'cell_id': None}, synchronize_session=False)
    if unmapped != 1:
        # Rolls the BuildRequest back with the transaction.
        raise MoveConflict(uuid=build_request.instance_uuid)
    if request_spec is not None:
        # Joins this transaction: same context.
        request_spec._context = context
        request_spec.save()
    if also is not None:
        also()


def move_to_build_request(context, build_request, cell0, request_spec=None,
                          also=None):
    """Write the BuildRequest and point the mapping at no cell, atomically.

    The mapping changes only if it still points at cell0 and the server is
    not being deleted (compare and swap), so of two concurrent moves
    exactly one succeeds and a deleted server never moves.

    :param request_spec: the RequestSpec from
        :func:`.nova_request_specs.reset_request_spec`,
        saved in the same API-database transaction.
    :param also: called inside that transaction too (the journal's step,
        when the plugin's tables share that database).
    :raises: MoveConflict when the mapping no longer points at cell0 or a
        BuildRequest for the server exists already.
    """
    try:
        _write_build_request_and_unmap(context, build_request, cell0.id,
                                       request_spec, also)
    except db_exc.DBDuplicateEntry:
        # build_requests.instance_uuid is unique: another move won.
        raise MoveConflict(uuid=build_request.instance_uuid)


@api_db_api.context_manager.reader
def still_pending(context, instance_uuid):
    """Whether the server still waits, unmapped, as a BuildRequest.

    What :func:`build_request_pending` answers, in one statement and
    without loading the BuildRequest: Nova's delete of such a server
    queues its mapping for delete and removes its BuildRequest.
    """
    mapping = api_models.InstanceMapping
    request = api_models.BuildRequest
    found = context.session.query(request.id).join(
        mapping, mapping.instance_uuid == request.instance_uuid).filter(
            request.instance_uuid == instance_uuid,
            mapping.cell_id.is_(None), _not_queued_for_delete()).first()
    return found is not None


def build_request_pending(context, instance_uuid):
    """The server's BuildRequest if it still waits for the conductor."""
    mapping = nova_servers.get_mapping(context, instance_uuid)
    if mapping is None or mapping.queued_for_delete or mapping.cell_mapping:
        return None
    try:
        return nova_objects.BuildRequest.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.BuildRequestNotFound:
        return None


def get_cell0(context):
    return nova_objects.CellMapping.get_by_uuid(
        context, nova_objects.CellMapping.CELL0_UUID)


def drop_build_request(context, instance_uuid):
    """Delete a server's BuildRequest, if any (the server is deleted)."""
    try:
        nova_objects.BuildRequest.get_by_instance_uuid(
            context, instance_uuid).destroy()
    except nova_exception.BuildRequestNotFound:
        pass


@api_db_api.context_manager.writer
def _remap_to_cell0_and_drop_build_request(context, instance_uuid, cell_id,
                                           fence=None):
    remapped = context.session.query(api_models.InstanceMapping).filter_by(
        instance_uuid=instance_uuid, cell_id=None).filter(
            _not_queued_for_delete()).update(
                {'cell_id': cell_id}, synchronize_session=False)
    deleted = context.session.query(api_models.BuildRequest).filter_by(
        instance_uuid=instance_uuid).delete(synchronize_session=False)
    if remapped != 1 or deleted != 1:
        raise MoveConflict(uuid=instance_uuid)
    if fence is not None:
        # Joins this transaction (same context) when the plugin's tables
        # share the API database: the lease is proven atomically with the
        # remap, and a refused fence rolls the remap back.
        fence()


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
        _remap_to_cell0_and_drop_build_request(context, instance.uuid,
                                               cell0.id, fence=fence)
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
    for bdm in clone_bdms(build_request.block_device_mappings):
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


def move_back_to_cell0(context, instance_uuid, cell0, fence=None):
    """Undo :func:`move_to_build_request` while the cell0 rows still exist.

    :param fence: called in the remap's transaction; it raises to refuse
        the remap (the caller lost its lease), and that propagates.
    :returns: whether the mapping pointed at no cell and was restored.
    """
    try:
        _remap_to_cell0_and_drop_build_request(context, instance_uuid,
                                               cell0.id, fence=fence)
    except MoveConflict:
        return False
    return True


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
                           copied=None):
    """Hard-delete every cell0 row of the instance, in one transaction.

    Hard, not soft: soft-deleted rows would later make ``nova-manage db
    archive_deleted_rows`` delete the mapping and RequestSpec of the
    server that by then lives in another cell. The rows Nova's own hard
    delete removes, without its read of the whole instance first.

    :param task_state: delete only while the instance still has this task
        state (the move's claim).
    :param copied: delete only while the instance row holds what this
        instance (as the move read and copied it) holds: a write Nova
        accepted since (a rename, a lock, a reset of its state) is never
        deleted with the row. Compared in the same DELETE, so it costs no
        statement.
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
                    session.query(model).filter(
                        getattr(model, column) == uuid).delete(
                            synchronize_session=False)
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
                    query = query.filter(*_unchanged_since_copied(
                        session, copied))
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
COMPARED_COLUMNS = tuple(sorted(
    (move_fields.INSTANCE_COPIED & frozenset(
        column.name for column in main_models.Instance.__table__.columns))
    | {'vm_state'}))


def _unchanged_since_copied(session, instance):
    """SQL criteria: the instance row still holds what *instance* holds.

    Exact comparisons: MySQL compares strings case-insensitively and
    ignores trailing spaces under Nova's collation, so a rename from 'web'
    to 'Web ' would look unchanged there without BINARY.
    """
    exact = session.bind.dialect.name == 'mysql'
    criteria = []
    for name in COMPARED_COLUMNS:
        if not instance.obj_attr_is_set(name):
            continue
        column = getattr(main_models.Instance, name)
        value = getattr(instance, name)
        if value is None:
            criteria.append(column.is_(None))
        elif exact and isinstance(value, str):
            criteria.append(sa.func.binary(column) == value)
        else:
            criteria.append(column == value)
    return criteria


class _NotDeleted(Exception):
    pass


def schedule_and_build(context, build_request, request_spec, image,
                       admin_password, networks, bdms):
    """Cast Nova's own schedule_and_build_instances for the server.

    :param bdms: from :func:`clone_bdms`; not the BuildRequest's own, which
        were read back from the database with no field marked as changed.
    """
    conductor_api.ComputeTaskAPI().schedule_and_build_instances(
        context, build_requests=[build_request],
        request_spec=[request_spec], image=image,
        admin_password=admin_password, injected_files=[],
        requested_networks=networks,
        block_device_mapping=bdms,
        tags=build_request.tags)
