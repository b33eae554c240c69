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

"""Adapter for what Nova keeps of a server deleted before it had a cell.

Nova keeps a deleted server's instance row, soft-deleted, with its actions
and faults, until ``nova-manage db archive_deleted_rows`` moves them to the
shadow tables; archive then removes the server's API-database records:
``InstanceMappingList.destroy_bulk``, ``RequestSpec.destroy_bulk`` and
``InstanceGroup.destroy_members_bulk``. A server deleted while it had no
instance row anywhere (a BuildRequest moving out of cell0, or waiting for
the conductor) never gets there, so this removes those records, deletes
its allocation as Nova's local delete does, and gives the server the row
Nova's delete would have left: in cell0, soft-deleted, with the history
the move stashed (:func:`keep_in_cell0`), for archive to find.

While the conductor may hold the server's ``schedule_and_build_instances``
it owns the mapping, the allocation and any cell row it writes: it
destroys the first two itself when it finds the BuildRequest gone, and
soft-deletes a row it wrote for archive. Only the RequestSpec and the group
membership, which it reads from the request it was sent, never from the
database, are removed then.
"""

from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import objects as nova_objects
from nova.scheduler.client import report
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.adapters import nova_servers

LOG = logging.getLogger(__name__)


def _deleted_unbuilt(context, instance_uuid, may_be_cast):
    """Whether the server is deleted and has no instance row in a cell."""
    found = nova_servers.where_is(context, [instance_uuid]).get(
        instance_uuid)
    if found is None:
        return True
    if found.build_request:
        return False  # still wanted, or Nova's delete is not done with it
    if found.cell_uuid is not None:
        # An instance row in a cell (cell0 included): Nova's delete and
        # archive own it; or heal mapped it back to cell0.
        return False
    # No cell and no BuildRequest: only a delete leaves that, but before
    # the cast the move sees the BuildRequest gone before Nova's delete
    # has queued the mapping; after it, only a queued mapping is proof.
    return found.queued_for_delete or not may_be_cast


def _delete_allocation(context, instance_uuid):
    try:
        report.report_client_singleton().delete_allocation_for_instance(
            context, instance_uuid, force=True)
    except Exception:
        # A buried server has none: a failure here leaves nothing that
        # placement's own consumer audit would not show.
        LOG.warning('Could not delete the allocation of deleted server %s',
                    instance_uuid, exc_info=True)


def forget_deleted_server(context, instance_uuid, may_be_cast):
    """Remove what Nova and its archive would of a server deleted unbuilt.

    :param context: an admin context.
    :param may_be_cast: whether the conductor may have been sent the
        server's ``schedule_and_build_instances``; then its mapping,
        allocation and cell rows are left to the conductor.
    :returns: whether the server was deleted with no instance row in a
        cell; if not, nothing is changed. If it was, the caller keeps its
        history with :func:`keep_in_cell0`.
    """
    if not _deleted_unbuilt(context, instance_uuid, may_be_cast):
        return False
    uuids = [instance_uuid]
    specs = nova_objects.RequestSpec.destroy_bulk(context, uuids)
    members = nova_objects.InstanceGroup.destroy_members_bulk(context, uuids)
    mappings = 0
    if not may_be_cast:
        mappings = nova_objects.InstanceMappingList.destroy_bulk(context,
                                                                 uuids)
        _delete_allocation(context, instance_uuid)
    LOG.info('Server %(uuid)s was deleted before it had a cell: removed '
             '%(mappings)d mapping, %(specs)d RequestSpec and %(members)d '
             'server group membership', {'uuid': instance_uuid,
                                         'mappings': mappings,
                                         'specs': specs, 'members': members})
    return True


#: The instance fields a row written from a stashed instance never takes
#: from it: the database gives them.
_NOT_COPIED = ('id', 'deleted', 'deleted_at', 'tags')


def keep_in_cell0(context, cell0, instance_uuid, history):
    """Leave a server deleted during its move in cell0, as Nova's delete does.

    In one cell0 transaction: the server's live cell0 row, if a stopped
    move left it (invisible: its mapping names no cell), or else a row
    written from the instance the move stashed (the one it wrote to the
    BuildRequest Nova's delete removed), gets the stashed history and is
    soft-deleted by Nova's own ``Instance.destroy``. Archive then moves it,
    its actions, events and faults to the shadow tables. A row that is
    already soft-deleted (by another actor that got here first, or by the
    conductor) only gets the history.

    :param context: an admin context.
    :param history: the move's stash (nova_instance_history.read, with the
        stashed instance under 'instance'), or None.
    :returns: whether cell0 holds the server, deleted, with its history;
        False only when it had no row there and *history* no instance (a
        stash written by an older release).
    """
    history = history or {}
    for _attempt in range(2):
        try:
            return _keep_in_cell0(context, cell0, instance_uuid, history)
        except db_exc.DBDuplicateEntry:
            # Another actor wrote the row meanwhile: add the history to it.
            continue
    return _keep_in_cell0(context, cell0, instance_uuid, history)


def _keep_in_cell0(context, cell0, instance_uuid, history):
    with nova_context.target_cell(context, cell0) as cctxt:
        # Nova's own writes below join this transaction: same context.
        with main_db_api.get_context_manager(cctxt).writer.using(
                cctxt) as session:
            row = session.query(main_models.Instance.deleted).filter_by(
                uuid=instance_uuid).first()
            if row is None:
                if not history.get('instance'):
                    return False
                _instance_from_stash(cctxt, history['instance']).create()
            if history.get('actions') or history.get('faults'):
                nova_instance_history.restore(session, instance_uuid,
                                              history, cell=cell0)
            if row is None or not row.deleted:
                _soft_delete(cctxt, instance_uuid)
    return True


def _instance_from_stash(cctxt, primitive):
    """A new cell0 instance from the stashed one, as the conductor buries.
    """
    stashed = nova_objects.Instance.obj_from_primitive(primitive)
    instance = nova_objects.Instance(cctxt)
    for field in stashed.obj_fields:
        if field not in _NOT_COPIED and stashed.obj_attr_is_set(field):
            setattr(instance, field, getattr(stashed, field))
    instance.vm_state = vm_states.ERROR
    instance.task_state = None
    return instance


def _soft_delete(cctxt, instance_uuid):
    """What Nova's local delete does to an instance with no host."""
    instance = nova_objects.Instance.get_by_uuid(cctxt, instance_uuid,
                                                 expected_attrs=[])
    instance.vm_state = vm_states.DELETED
    instance.task_state = None
    instance.terminated_at = timeutils.utcnow()
    instance.save()
    instance.destroy()
