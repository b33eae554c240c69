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
them landed in a real cell or was deleted, the record is deleted. Following
a server until Nova places it happens in the background, bounded in time;
``nova-cell0-rebuild-manage purge`` removes what a follow-up missed.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild import system_metadata
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)


def servers_of(context, record):
    """The uuids of every server the record's create made."""
    uuids = set()
    if record.reservation_id:
        uuids.update(nova_servers.get_instance_uuids_by_reservation(
            context, record.reservation_id))
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


def follow(context, record, instance_uuids, accept_uuid=None):
    """Follow the servers of a create or a rebuild until Nova places them.

    Each server placed anywhere (cell0 included) gets the personality
    marker if its create had personality files; once a server lands in a
    real cell the record is deleted if none of its servers still waits.

    :param accept_uuid: first accept the record for this server, in the
        background too, so that Nova's answer does not wait for it.
    """
    mark = record.created_with_personality_files

    def on_placed(ctxt, instance_uuid, cell_mapping):
        if mark:
            nova_servers.set_cell_system_metadata(
                ctxt, cell_mapping, instance_uuid,
                system_metadata.CREATED_WITH_PERSONALITY_FILES,
                system_metadata.TRUE)
        if not nova_servers.is_cell0(cell_mapping):
            forget_if_placed(ctxt, record)

    def accept():
        record.accept(instance_uuid=accept_uuid)

    return nova_servers.when_placed(
        context, instance_uuids, on_placed,
        first=accept if accept_uuid is not None else None)


def record_of_server(context, instance_uuid):
    """The create record of a server, or None."""
    reservation_id = nova_servers.get_reservation_id(context, instance_uuid)
    try:
        return objects.CreateRecord.get_for_instance(
            context, instance_uuid, reservation_id=reservation_id)
    except exception.CreateRecordNotFound:
        return None


def forget_deleted(context, instance_uuid, record):
    """Forget what the plugin kept of a server Nova deleted.

    Its move journal goes, and its create record once no other server of
    the same create still waits in cell0 or in a BuildRequest.
    """
    journal = objects.MoveJournal.get_by_instance_uuid(context,
                                                       instance_uuid)
    if journal is not None:
        journal.destroy()
    # Nova keeps the history of a deleted server (until archive): so do we.
    server_history.materialise(context, instance_uuid)
    if record is not None:
        forget_if_placed(context, record)
