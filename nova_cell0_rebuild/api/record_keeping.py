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

"""How long a create record lives.

A record is needed while any server of its create waits in cell0 or in a
BuildRequest: such a server may be buried (again) and rebuilt. Once each of
them landed in a real cell or was deleted, the record can go. A DELETE of
the last such server deletes it in its request; nothing waits for a server
to land (no request may leave work behind), so
``nova-cell0-rebuild-manage purge``, run periodically, removes the records
of servers that landed.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)


def waiting_servers(context, record, reservation_id=None, first_uuid=None):
    """(reservation id, uuids) of the record's servers not in a real cell.

    Looked up in the record's project since its create started (see
    :func:`nova_servers.waiting_servers_of_create`).
    """
    return nova_servers.waiting_servers_of_create(
        context, record.project_id, record.created_at.replace(tzinfo=None),
        reservation_id=reservation_id, first_uuid=first_uuid)


def servers_of(context, record):
    """The uuids of the servers of the record's create that may wait.

    Those named when Nova accepted the create. A record of a multi-create
    accepted by a plugin older than CreateRecord 1.2 names only its
    reservation: its servers are then looked up by it, in two indexed
    queries (the project's BuildRequests since the create, cell0).
    """
    uuids = set(record.server_uuids or ())
    if record.server_uuids is None and record.reservation_id:
        uuids.update(waiting_servers(
            context, record, reservation_id=record.reservation_id)[1])
    if record.instance_uuid:
        uuids.add(record.instance_uuid)
    return sorted(uuids)


def forget_if_placed(context, record):
    """Delete the record once no server of its create can be rebuilt.

    :returns: whether it was deleted.
    """
    if nova_servers.still_in_cell0_or_building(
            context, servers_of(context, record)):
        return False
    record.destroy()
    LOG.debug('Create record of request %s deleted: its servers landed or '
              'are gone', record.request_id)
    return True


def record_of_server(context, instance_uuid):
    """The create record of a server, or None.

    A one-server create's record names the server: one indexed query on
    the plugin's table. Only when none does, the reservation of the server
    is looked up (siblings of a multi-create share one record).
    """
    try:
        return objects.CreateRecord.get_for_instance(context, instance_uuid)
    except exception.CreateRecordNotFound:
        pass
    reservation_id = nova_servers.get_reservation_id(context, instance_uuid)
    if reservation_id is None:
        return None
    try:
        return objects.CreateRecord.get_for_instance(
            context, instance_uuid, reservation_id=reservation_id)
    except exception.CreateRecordNotFound:
        return None


def _kept(journal, building):
    """Whether a deleted server's journal is kept for heal (marked): its
    move may have cast, and is in flight or handed its BuildRequest off.

    A move done long ago whose server Nova buried in cell0 again is not:
    nothing of its hand-off is left to release.
    """
    return journal.may_be_cast() and (
        building or journal.status == fields.MoveStatus.IN_PROGRESS)


def forget_deleted(context, instance_uuid, record, building=True):
    """Forget what the plugin kept of a server Nova deleted.

    Its move journal goes (kept, marked, when the server was deleted
    during its hand-off to the conductor: see
    ``MoveJournal.keep_after_delete``), and its create record once no
    other server of the same create still waits in cell0 or in a
    BuildRequest.

    :param building: whether the server was a BuildRequest when its DELETE
        came (or that is unknown).
    :returns: whether Nova's conductor may have been asked to build the
        server: False only for a move stopped (or stopping) before its
        cast, which can never cast once its journal is gone.
    """
    may_be_cast = True
    journal = objects.MoveJournal.get_by_instance_uuid(context,
                                                       instance_uuid)
    # A live move may record a step meanwhile: each retry sees one more.
    for _attempt in fields.MoveStep.ALL:
        if journal is None:
            break
        try:
            if _kept(journal, building):
                journal.keep_after_delete()
            else:
                journal.destroy_if_unchanged()
        except exception.JournalConflict:
            journal = objects.MoveJournal.get_by_instance_uuid(
                context, instance_uuid)
            continue
        may_be_cast = (journal.status != fields.MoveStatus.IN_PROGRESS or
                       journal.step in move_journal.MAY_BE_CAST)
        break
    else:
        # Each read was changed before it could be written (the move kept
        # stepping): decide on the last one, unconditionally.
        if journal is not None and _kept(journal, building):
            journal.keep_after_delete(fenced=False)
        elif journal is not None:
            journal.destroy()
    # Nova keeps the history of a deleted server (until archive): so do we.
    server_history.materialise(context, instance_uuid)
    if record is not None:
        forget_if_placed(context, record)
    return may_be_cast
