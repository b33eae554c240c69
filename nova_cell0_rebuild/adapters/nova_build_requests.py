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

"""Adapter for a moving server's BuildRequest and mapping in Nova's API DB.

A server buried in cell0 is handed back to the very pipeline that created
it: a BuildRequest in the API database, an InstanceMapping pointing at no
cell, its RequestSpec saved with them, and the conductor's
``schedule_and_build_instances``. Here are those API-database writes
(each a compare-and-swap on the mapping), their undo, and the cast. The
RequestSpec is derived in :mod:`.nova_request_specs`; the cell0 rows are
claimed, deleted and written again in :mod:`.nova_cell0_rows`.
"""

from nova.compute import power_state
from nova.compute import task_states
from nova.compute import vm_states
from nova.conductor import api as conductor_api
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import exception as nova_exception
from nova.network import model as network_model
from nova import objects as nova_objects
from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_move_fields as move_fields
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import exception


class MoveConflict(exception.Cell0RebuildException):
    msg_fmt = 'Instance %(uuid)s is no longer mapped to cell0.'


class RequestSpecChanged(exception.Cell0RebuildException):
    """Nova wrote the server's RequestSpec since the move read it."""

    msg_fmt = 'The RequestSpec of instance %(uuid)s changed meanwhile.'


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


@db_api.retry_on_deadlock
@api_db_api.context_manager.writer
def _write_build_request_and_unmap(context, build_request, cell_id,
                                   request_spec, also):
    """The move's API-database transaction, retried whole on DBDeadlock.

    The objects written change in memory only once it committed: a
    retry (or a caller that sees it fail) finds them as they were.
    """
    _create_build_request(context, build_request)
    unmapped = context.session.query(api_models.InstanceMapping).filter_by(
        instance_uuid=build_request.instance_uuid, cell_id=cell_id).filter(
            _not_queued_for_delete()).update(
                {'cell_id': None}, synchronize_session=False)
    if unmapped != 1:
        # Rolls the BuildRequest back with the transaction.
        raise MoveConflict(uuid=build_request.instance_uuid)
    if request_spec is not None:
        _save_request_spec_unless_changed(context, request_spec)
    if also is not None:
        also()


def _create_build_request(context, build_request):
    """``BuildRequest.create()``, its object updated once committed."""
    if build_request.obj_attr_is_set('id'):
        raise nova_exception.ObjectActionError(action='create',
                                               reason='already created')
    db_request = build_request._create_in_db(
        context, build_request._get_update_primitives())
    db_api.after_commit(context, lambda: build_request._from_db_object(
        build_request._context, build_request, db_request))


def _save_request_spec_unless_changed(context, request_spec):
    """``RequestSpec.save()``, refused if Nova changed its stored zone.

    Nova's API writes the RequestSpec of a server in cell0 for one thing:
    unpinning (or pinning) its availability zone (PUT /servers/{id},
    2.104). The move read the RequestSpec before its claim; saving it
    whole would undo such a write. The stored row is read by the same
    statement ``save()`` reads it with, in this transaction.

    :raises: RequestSpecChanged, which rolls the transaction back.
    """
    spec_class = nova_objects.RequestSpec
    db_spec = spec_class._get_by_instance_uuid_from_db(
        context, request_spec.instance_uuid)
    stored = jsonutils.loads(db_spec.spec).get('nova_object.data', {})
    read = (request_spec.availability_zone
            if request_spec.obj_attr_is_set('availability_zone') else None)
    if stored.get('availability_zone') != read:
        raise RequestSpecChanged(uuid=request_spec.instance_uuid)
    request_spec._context = context  # joins this transaction
    db_spec.update(request_spec._get_update_primitives())
    db_spec.save(context.session)
    # Its changes are kept until the commit: a retry saves them again.
    db_api.after_commit(context, request_spec.obj_reset_changes)


def move_to_build_request(context, build_request, cell0, request_spec=None,
                          also=None):
    """Write the BuildRequest and point the mapping at no cell, atomically.

    The mapping changes only if it still points at cell0 and the server is
    not being deleted (compare and swap), so of two concurrent moves
    exactly one succeeds and a deleted server never moves.

    :param request_spec: the RequestSpec from
        :func:`.nova_request_specs.reset_request_spec`, saved in the same
        API-database transaction.
    :param also: called inside that transaction too (the journal's step,
        when the plugin's tables share that database).
    :raises: MoveConflict when the mapping no longer points at cell0 or a
        BuildRequest for the server exists already; RequestSpecChanged when
        Nova changed the server's RequestSpec since it was read.
    """
    try:
        _write_build_request_and_unmap(context, build_request, cell0.id,
                                       request_spec, also)
    except db_exc.DBDuplicateEntry:
        # build_requests.instance_uuid is unique: another move won.
        raise MoveConflict(uuid=build_request.instance_uuid)


@api_db_api.context_manager.reader
def still_pending(context, instance_uuid):
    """The server's instance as its BuildRequest stores it, if it still
    waits, unmapped, as that BuildRequest; else None.

    What :func:`build_request_pending` answers, in one statement: Nova's
    delete of such a server queues its mapping for delete and removes its
    BuildRequest. The instance is read back because Nova's API writes a
    rename of a server that is a BuildRequest to it (see
    :func:`take_stored_edits`).
    """
    mapping = api_models.InstanceMapping
    request = api_models.BuildRequest
    found = context.session.query(request.instance).join(
        mapping, mapping.instance_uuid == request.instance_uuid).filter(
            request.instance_uuid == instance_uuid,
            mapping.cell_id.is_(None), _not_queued_for_delete()).first()
    if found is None:
        return None
    return nova_objects.Instance.obj_from_primitive(
        jsonutils.loads(found.instance))


@api_db_api.context_manager.reader
def unmapped_before(context, written_before):
    """The uuids of the servers still waiting as a BuildRequest dated
    before *written_before* (a naive UTC datetime), mapped to no cell.

    One statement. A pre-filter only: a move dates its BuildRequest with
    the server's creation (Nova shows it as ``created``), so a moving
    server's usually passes; whether its hand-off is old is the journal's
    to say (``MoveJournal.list_handed_off_before``). The table holds the
    servers waiting for the conductor: a few rows, scanned whole.
    """
    mapping = api_models.InstanceMapping
    request = api_models.BuildRequest
    rows = context.session.query(request.instance_uuid).join(
        mapping, mapping.instance_uuid == request.instance_uuid).filter(
            request.created_at <= written_before,
            mapping.cell_id.is_(None), _not_queued_for_delete()).all()
    return [row[0] for row in rows]


def take_stored_edits(build_request, stored):
    """Put on the BuildRequest to cast what Nova's API wrote to its row.

    Nova's conductor builds the instance from the BuildRequest it is cast,
    not from the database: a rename (name, description, hostname) that
    Nova's API wrote to the BuildRequest since the move wrote it would be
    lost.

    :param stored: the instance :func:`still_pending` read back.
    """
    for field in move_fields.INSTANCE_COPIED:
        if stored.obj_attr_is_set(field):
            setattr(build_request.instance, field, getattr(stored, field))


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


def drop_build_request(context, instance_uuid):
    """Delete a server's BuildRequest, if any (the server is deleted)."""
    try:
        nova_objects.BuildRequest.get_by_instance_uuid(
            context, instance_uuid).destroy()
    except nova_exception.BuildRequestNotFound:
        pass


@db_api.retry_on_deadlock
@api_db_api.context_manager.writer
def remap_to_cell0_and_drop_build_request(context, instance_uuid, cell_id,
                                          fence=None):
    """Point the mapping at cell0 again and delete the BuildRequest.

    One API-database transaction, by compare-and-swap: the mapping must
    point at no cell and not be queued for delete, and the BuildRequest
    must exist. The end of every undo of a move (:func:`move_back_to_cell0`
    and :func:`.nova_cell0_rows.bury_again`).

    :param cell_id: cell0's id.
    :param fence: called in this transaction; it raises to refuse the
        remap (the caller lost its lease), which rolls it back.
    :raises: MoveConflict when the mapping or the BuildRequest is not as
        the move left them; what *fence* raises. Retried whole on
        DBDeadlock (the fence's journal write with it).
    """
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


def move_back_to_cell0(context, instance_uuid, cell0, fence=None):
    """Undo :func:`move_to_build_request` while the cell0 rows still exist.

    :param fence: called in the remap's transaction; it raises to refuse
        the remap (the caller lost its lease), and that propagates.
    :returns: whether the mapping pointed at no cell and was restored.
    """
    try:
        remap_to_cell0_and_drop_build_request(context, instance_uuid,
                                              cell0.id, fence=fence)
    except MoveConflict:
        return False
    return True


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
