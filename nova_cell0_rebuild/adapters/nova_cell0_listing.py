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

"""Adapter for listing the servers in cell0 in pages, for command lines.

Each page costs a constant number of indexed queries, whatever the number
of servers in cell0.
"""

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova.objects import cell_mapping

#: Raised when no cell0 is mapped.
Cell0NotMapped = nova_exception.CellMappingNotFound


def admin_context():
    """A Nova admin context, for command lines."""
    return nova_context.get_admin_context()


def get_cell0(context):
    """The cell0 CellMapping; raises Cell0NotMapped."""
    return nova_objects.CellMapping.get_by_uuid(
        context, cell_mapping.CellMapping.CELL0_UUID)


def pages(context, cell0, page_size):
    """Yield the servers not deleted in cell0, *page_size* at a time.

    Ordered by creation, oldest first, with Nova's own marker paging
    (``instances_deleted_created_at_idx``).

    :returns: an iterator of lists of Instance, without joined fields.
    """
    marker = None
    while True:
        with nova_context.target_cell(context, cell0) as cctxt:
            page = nova_objects.InstanceList.get_by_filters(
                cctxt, {'deleted': False}, limit=page_size, marker=marker,
                expected_attrs=[], sort_keys=['created_at', 'id'],
                sort_dirs=['asc', 'asc'])
        if not page:
            return
        yield list(page)
        if len(page) < page_size:
            return
        marker = page[-1].uuid


def create_request_ids(context, cell0, instance_uuids):
    """The request id of the ``create`` action of each server, in one query.

    :returns: {instance uuid: request id} for the servers that have one.
    """
    if not instance_uuids:
        return {}
    action = main_models.InstanceAction
    with nova_context.target_cell(context, cell0) as cctxt:
        with main_db_api.get_context_manager(cctxt).reader.using(
                cctxt) as session:
            rows = session.query(
                action.instance_uuid, action.request_id).filter(
                action.instance_uuid.in_(list(instance_uuids)),
                action.action == 'create', action.deleted == 0).all()
    return {row.instance_uuid: row.request_id for row in rows}


def servers_created_by(context, cell0, request_id):
    """The live cell0 servers whose ``create`` action carries *request_id*.

    Nova writes that action, with the create request's id, when it buries
    a server in cell0 (every sibling of a multi-create gets one). Nova
    indexes ``instance_actions.request_id`` (``request_id_idx``), so this is
    one indexed query whatever the size of cell0.

    :returns: [(instance uuid, reservation id)], in launch order.
    """
    action = main_models.InstanceAction
    instance = main_models.Instance
    with nova_context.target_cell(context, cell0) as cctxt:
        with main_db_api.get_context_manager(cctxt).reader.using(
                cctxt) as session:
            rows = session.query(
                instance.uuid, instance.reservation_id).join(
                action, action.instance_uuid == instance.uuid).filter(
                action.request_id == request_id,
                action.action == 'create', action.deleted == 0,
                instance.deleted == 0).order_by(
                    instance.launch_index, instance.uuid).all()
    return [(row.uuid, row.reservation_id) for row in rows]
