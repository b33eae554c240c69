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

"""Adapter for where Nova keeps a server: mappings, build requests, cells."""

import dataclasses
import datetime
import typing as ty

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova.objects import cell_mapping
from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova_cell0_rebuild import exception

LOG = logging.getLogger(__name__)

CELL0_UUID = cell_mapping.CellMapping.CELL0_UUID


def register_nova_objects():
    """Make sure Nova's objects are registered (nova-api does it too)."""
    nova_objects.register_all()


def get_mapping(context, instance_uuid):
    """Return the InstanceMapping of a server, or None if it has none."""
    try:
        return nova_objects.InstanceMapping.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.InstanceMappingNotFound:
        return None


def _get_build_request(context, instance_uuid):
    try:
        return nova_objects.BuildRequest.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.BuildRequestNotFound:
        return None


def _get_cell_instance(context, cell_mapping, instance_uuid, attrs=()):
    with nova_context.target_cell(context, cell_mapping) as cctxt:
        try:
            return nova_objects.Instance.get_by_uuid(
                cctxt, instance_uuid, expected_attrs=list(attrs))
        except nova_exception.InstanceNotFound:
            return None


def get_reservation_id(context, instance_uuid):
    """Return the reservation id of a server wherever it is, or None."""
    mapping = get_mapping(context, instance_uuid)
    if mapping is None:
        return None
    if mapping.cell_mapping is None:
        build_request = _get_build_request(context, instance_uuid)
        if build_request is not None:
            return build_request.instance.reservation_id
        # Nova moved it to a cell meanwhile.
        mapping = get_mapping(context, instance_uuid)
        if mapping is None or mapping.cell_mapping is None:
            return None
    instance = _get_cell_instance(context, mapping.cell_mapping,
                                  instance_uuid)
    return instance.reservation_id if instance is not None else None


def set_cell_system_metadata(context, cell_mapping, instance_uuid, key,
                             value):
    """Set a system_metadata key on a live instance in one cell.

    Only the key's row is written, in one transaction: the instance row
    and its ``updated`` stay as they are, so that a refused request shows
    no change. :returns: False if the instance is gone.
    """
    with nova_context.target_cell(context, cell_mapping) as cctxt:
        with main_db_api.get_context_manager(cctxt).writer.using(
                cctxt) as session:
            live = session.query(main_models.Instance.id).filter_by(
                uuid=instance_uuid, deleted=0).first()
            if live is None:
                return False
            main_db_api.instance_system_metadata_update(
                cctxt, instance_uuid, {key: value}, False)
    return True


def is_cell0(cell_mapping):
    return cell_mapping is not None and cell_mapping.uuid == CELL0_UUID


@dataclasses.dataclass(frozen=True)
class Whereabouts(object):
    """Where Nova keeps a server, as its API database says.

    :ivar cell_uuid: the uuid of the cell its mapping names, or None.
    :ivar queued_for_delete: Nova's delete queued its mapping (NULL, as
        Nova reads it, is not).
    :ivar build_request: a BuildRequest of it exists.
    :ivar stashed: it has a row in the table joined as *stash* by
        :func:`where_is` (None: not looked up).
    """

    cell_uuid: ty.Optional[str]
    queued_for_delete: bool
    build_request: bool
    stashed: ty.Optional[bool] = None

    @property
    def in_real_cell(self):
        """Placed in a cell that is not cell0: no concern of the plugin."""
        return self.cell_uuid is not None and self.cell_uuid != CELL0_UUID

    @property
    def waiting(self):
        """Alive and still in cell0 or a BuildRequest: may be rebuilt."""
        return not self.queued_for_delete and not self.in_real_cell


@api_db_api.context_manager.reader
def where_is(context, instance_uuids, stash=None):
    """{uuid: Whereabouts} of the servers that have a mapping.

    One indexed statement whatever the number of servers, cells and build
    requests: the mappings (``instance_uuid`` is unique) joined with their
    cell and BuildRequest; no object is loaded or deserialized.

    :param stash: a table in the API database with a unique
        ``instance_uuid`` (the plugin's stashed histories), outer-joined
        in the same statement: whether a server has a row there costs
        nothing more.
    """
    if not instance_uuids:
        return {}
    mapping = api_models.InstanceMapping
    cell = api_models.CellMapping
    request = api_models.BuildRequest
    columns = [mapping.instance_uuid, cell.uuid, mapping.queued_for_delete,
               request.id]
    if stash is not None:
        columns.append(stash.c.id)
    query = context.session.query(*columns).outerjoin(
        cell, cell.id == mapping.cell_id).outerjoin(
        request, request.instance_uuid == mapping.instance_uuid)
    if stash is not None:
        query = query.outerjoin(
            stash, stash.c.instance_uuid == mapping.instance_uuid)
    rows = query.filter(
        mapping.instance_uuid.in_(list(instance_uuids))).all()
    return {row[0]: Whereabouts(
        cell_uuid=row[1], queued_for_delete=bool(row[2]),
        build_request=row[3] is not None,
        stashed=(row[4] is not None) if stash is not None else None)
        for row in rows}


def still_in_cell0_or_building(context, instance_uuids):
    """The servers among *instance_uuids* not yet placed in a real cell.

    One statement (:func:`where_is`); servers deleted or without a mapping
    are not waiting.
    """
    found = where_is(context, instance_uuids)
    return [uuid for uuid in instance_uuids
            if uuid in found and found[uuid].waiting]


#: How much earlier than the create record a BuildRequest of the same
#: request may say it was written: MySQL's DATETIME keeps whole seconds.
_CLOCK_SLACK = datetime.timedelta(seconds=2)


def _reservation_of(serialized_instance):
    """The reservation id in a BuildRequest's serialized Instance, or None.

    Read from the primitive: deserializing the Instance (what Nova's
    BuildRequest does) is not needed for one string.
    """
    try:
        return jsonutils.loads(serialized_instance)[
            'nova_object.data'].get('reservation_id')
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


@api_db_api.context_manager.reader
def _project_build_requests_since(context, project_id, since):
    """[(instance uuid, reservation id)] of a project's recent BuildRequests.

    One query on ``build_requests_project_id_idx``: BuildRequests of other
    projects, and the project's own written before *since*, are not read.
    """
    request = api_models.BuildRequest
    rows = context.session.query(request.instance_uuid,
                                 request.instance).filter(
        request.project_id == project_id,
        request.created_at >= since - _CLOCK_SLACK).all()
    return [(uuid, _reservation_of(instance)) for uuid, instance in rows]


def _cell0():
    """cell0's CellMapping from nova-api's cache of cell mappings.

    ``nova.context.load_cells`` reads the cell mappings once per process
    (Nova's scatter-gather relies on the same cache); nova-api must be
    restarted when cells change anyway.
    """
    nova_context.load_cells()
    for cell in nova_context.CELLS:
        if cell.uuid == CELL0_UUID:
            return cell
    raise nova_exception.CellMappingNotFound(uuid=CELL0_UUID)


def _cell0_servers_of_reservation(context, reservation_id):
    """The uuids of the live cell0 instances of one reservation.

    One query on ``instances_reservation_id_idx``.
    """
    with nova_context.target_cell(context, _cell0()) as cctxt:
        with main_db_api.get_context_manager(cctxt).reader.using(
                cctxt) as session:
            rows = session.query(main_models.Instance.uuid).filter_by(
                reservation_id=reservation_id, deleted=0).all()
    return [uuid for uuid, in rows]


def waiting_servers_of_create(context, project_id, since,
                              reservation_id=None, first_uuid=None):
    """(reservation id, uuids) of a create's servers not in a real cell.

    For a multi-create Nova just accepted: its servers are BuildRequests,
    or already in cell0 or a real cell if the conductor was quick. Two
    statements whatever the size of the deployment: the project's
    BuildRequests written since the create started (*since*), then cell0
    by reservation. In that order: the conductor creates a server in cell0
    before it deletes its BuildRequest, so none can slip between the two.
    Servers already in a real cell are left out: they cannot be buried
    any more. The reservation is the one of *first_uuid* (the server
    Nova's answer names) when *reservation_id* is not known.
    """
    requests = _project_build_requests_since(context, project_id, since)
    if reservation_id is None:
        reservation_id = next((reservation for uuid, reservation in requests
                               if uuid == first_uuid), None)
    if reservation_id is None and first_uuid is not None:
        # Its BuildRequest is gone already: ask where the server went.
        reservation_id = get_reservation_id(context, first_uuid)
    if reservation_id is None:
        return None, [first_uuid] if first_uuid else []
    uuids = {uuid for uuid, reservation in requests
             if reservation == reservation_id}
    uuids.update(_cell0_servers_of_reservation(context, reservation_id))
    return reservation_id, sorted(uuids)


def get_cell0_instance(context, cell0, instance_uuid):
    """A cell0 instance with what the gates look at, or None."""
    return _get_cell_instance(context, cell0, instance_uuid,
                              attrs=('system_metadata', 'flavor'))


def list_cell0_instances(context, cell0, project_id=None, marker=None,
                         limit=50):
    """A page of live cell0 instances, oldest first, with their faults.

    :returns: (instances, {uuid: latest fault}, {uuid: mapping}); each a
        fixed number of indexed queries, whatever the size of cell0.
    :raises: RequestRefused(400) when *marker* is no cell0 instance, with
        Nova's message.
    """
    filters = {'deleted': False}
    if project_id:
        filters['project_id'] = project_id
    with nova_context.target_cell(context, cell0) as cctxt:
        try:
            instances = nova_objects.InstanceList.get_by_filters(
                cctxt, filters, sort_keys=['created_at', 'uuid'],
                sort_dirs=['asc', 'asc'], limit=limit, marker=marker,
                expected_attrs=['system_metadata', 'flavor'])
        except nova_exception.MarkerNotFound as exc:
            raise exception.RequestRefused(400, exc.format_message())
        uuids = [instance.uuid for instance in instances]
        faults = nova_objects.InstanceFaultList.get_latest_by_instance_uuids(
            cctxt, uuids) if uuids else []
    mappings = nova_objects.InstanceMappingList.get_by_instance_uuids(
        context, uuids) if uuids else []
    return (list(instances),
            {fault.instance_uuid: fault for fault in faults},
            {mapping.instance_uuid: mapping for mapping in mappings})


def visible_to(context, mapping):
    """Whether Nova shows the server to the caller (an admin, or a user of
    its project); others get the 404 of a server that does not exist.
    """
    return not (nova_context.is_user_context(context) and
                context.project_id != mapping.project_id)


def policy_target(context, mapping):
    """The policy target of a server known only by its mapping.

    For a server that is neither in a cell nor visible as an instance
    (a move of ours left it unmapped): a caller of another project gets
    the 404 Nova's project-scoped instance query would give.

    :raises: RequestRefused(404).
    """
    if (nova_context.is_user_context(context) and
            context.project_id != mapping.project_id):
        raise exception.RequestRefused(
            404, nova_exception.InstanceNotFound(
                instance_id=mapping.instance_uuid).format_message())
    # Mappings written before Nova stored their user (and some of Nova's
    # own test fixtures) have none: the target then names no user, as an
    # instance without one would.
    user_id = mapping.user_id if mapping.obj_attr_is_set('user_id') else None
    return {'project_id': mapping.project_id, 'user_id': user_id}


@api_db_api.context_manager.reader
def project_build_request_between(context, project_id, start, end):
    """Whether a BuildRequest of the project was written in [start, end].

    For a create whose record never learnt its server: a BuildRequest
    written while its request ran may be that server, still waiting for
    the conductor. One query on ``build_requests_project_id_idx``; nothing
    is deserialized.
    """
    request = api_models.BuildRequest
    return context.session.query(request.id).filter(
        request.project_id == project_id, request.created_at >= start,
        request.created_at <= end).first() is not None
