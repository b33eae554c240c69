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

Nova removes the API-database records of a deleted server when ``nova-manage
db archive_deleted_rows`` archives its soft-deleted instance row:
``InstanceMappingList.destroy_bulk``, ``RequestSpec.destroy_bulk`` and
``InstanceGroup.destroy_members_bulk``. A server deleted while it had no
instance row anywhere (a BuildRequest moving out of cell0, or waiting for
the conductor) never gets there, so this does it, deletes its allocation
as Nova's local delete does, and hard-deletes a live cell0 row a stopped
move left behind.

While the conductor may hold the server's ``schedule_and_build_instances``
it owns the mapping, the allocation and any cell row it writes: it
destroys the first two itself when it finds the BuildRequest gone, and
soft-deletes a row it wrote for archive. Only the RequestSpec and the group
membership, which it reads from the request it was sent, never from the
database, are removed then.
"""

from nova import objects as nova_objects
from nova.scheduler.client import report
from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
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


def _destroy_live_cell0_rows(context, instance_uuid):
    """Hard-delete a cell0 row a move left live and unmapped.

    A move that wrote the BuildRequest and stopped before the cell0 hard
    delete leaves the claimed row, which Nova's delete of the BuildRequest
    never sees and which quota would count for ever. Soft-deleted rows
    are archive's, which removes them.
    """
    cell0 = cell0_rows.get_cell0(context)
    instance = nova_servers.get_cell0_instance(context, cell0, instance_uuid)
    if instance is not None:
        cell0_rows.destroy_cell0_instance(context, cell0, instance)


def forget_deleted_server(context, instance_uuid, may_be_cast):
    """Remove what Nova and its archive would of a server deleted unbuilt.

    :param context: an admin context.
    :param may_be_cast: whether the conductor may have been sent the
        server's ``schedule_and_build_instances``; then its mapping,
        allocation and cell rows are left to the conductor.
    :returns: whether the server was deleted with no instance row in a
        cell; if not, nothing is changed.
    """
    if not _deleted_unbuilt(context, instance_uuid, may_be_cast):
        return False
    uuids = [instance_uuid]
    specs = nova_objects.RequestSpec.destroy_bulk(context, uuids)
    members = nova_objects.InstanceGroup.destroy_members_bulk(context, uuids)
    mappings = 0
    if not may_be_cast:
        _destroy_live_cell0_rows(context, instance_uuid)
        mappings = nova_objects.InstanceMappingList.destroy_bulk(context,
                                                                 uuids)
        _delete_allocation(context, instance_uuid)
    LOG.info('Server %(uuid)s was deleted before it had a cell: removed '
             '%(mappings)d mapping, %(specs)d RequestSpec and %(members)d '
             'server group membership', {'uuid': instance_uuid,
                                         'mappings': mappings,
                                         'specs': specs, 'members': members})
    return True
