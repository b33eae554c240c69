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

"""Purge: forget create records and journals nobody needs any more.

A create record is needed while a server of its create could still be
rebuilt from cell0: while it waits in cell0 or in a BuildRequest. Nothing
deletes a record when its server lands in a real cell (no request waits for
that), so purge does, run periodically (a daily cron is enough). A move
journal is needed while its server exists and the move is in progress,
and, marked, when its server was deleted during its hand-off, until heal
released what the conductor may hold for it (``tasks/heal.py``).
A relay announcement is needed while Nova's notification of the burial
may still be delivered again (seconds to minutes): one announced, or
whose relay's lease ran out, goes once it is an hour old.

Every delete is conditional on the row being as purge read it, so that a
row a concurrent request changed (completed, restarted, removed) is left
alone and not reported.
"""

import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_cell0_listing
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)

_PAGE = 200
#: A record still pending this long belongs to a create whose completion
#: never ran (nova-api stopped, or its UPDATE failed): Nova answers creates
#: in seconds.
PENDING_GRACE = datetime.timedelta(hours=1)

#: A relay announcement younger than this is kept whatever --before says:
#: RabbitMQ may still deliver its notification again, and without the row
#: the burial would be announced twice.
ANNOUNCEMENT_GRACE = datetime.timedelta(hours=1)

#: Keep, accept (a pending record of a server in cell0), delete.
KEEP, ACCEPT, DELETE = 'keep', 'accept', 'delete'


def _older(obj, before):
    stamp = obj.updated_at or obj.created_at
    return before is None or (stamp is not None and
                              stamp.replace(tzinfo=None) < before)


def _naive(stamp):
    return stamp.replace(tzinfo=None) if stamp is not None else None


def _delete_unchanged(context, model, row_id, seen):
    """Delete a row only if *seen* columns still hold; True if deleted."""
    with db_api.writer(context) as session:
        query = session.query(model).filter(model.id == row_id)
        for column, value in seen.items():
            attr = getattr(model, column)
            query = query.filter(attr.is_(None) if value is None
                                 else attr == value)
        return query.delete(synchronize_session=False) == 1


def _pending_verdict(context, cell0, record):
    """What to do with a record left pending past the grace.

    :returns: (verdict, [(uuid, reservation id)] of its cell0 servers).
    """
    servers = nova_cell0_listing.servers_created_by(context, cell0,
                                                    record.request_id)
    if servers:
        return ACCEPT, servers
    # Its server may still wait for the conductor: a BuildRequest carries
    # no request id, so any of the project's written while the create ran
    # keeps the record until a later purge.
    start = _naive(record.created_at)
    if nova_servers.project_build_request_between(
            context, record.project_id, start, start + PENDING_GRACE):
        return KEEP, servers
    return DELETE, servers


def _record_verdict(context, cell0, record, before):
    """(verdict, cell0 servers) for one create record."""
    if record.status != fields.CreateRecordStatus.ACCEPTED:
        # Pending: Nova has not answered yet, or its completion never ran.
        if not _older(record, min(before, timeutils.utcnow() -
                                  PENDING_GRACE)):
            return KEEP, []
        return _pending_verdict(context, cell0, record)
    if _older(record, before) and not (
            nova_servers.still_in_cell0_or_building(
                context, record_keeping.servers_of(context, record))):
        return DELETE, []
    return KEEP, []


def _accept_from_cell0(record, servers):
    """Complete a pending record from the servers found in cell0."""
    if len(servers) == 1:
        # One server: found by its uuid, as after a normal completion.
        record.accept(instance_uuid=servers[0][0])
    else:
        record.accept(instance_uuid=servers[0][0],
                      reservation_id=servers[0][1])
    LOG.info('Create record of request %s completed by purge: its servers '
             '%s are in cell0', record.request_id,
             ', '.join(uuid for uuid, _ in servers))


def purge_records(context, before, dry_run=False):
    """Purge create records; (deleted request ids, accepted request ids).
    """
    cell0 = nova_cell0_listing.get_cell0(context)
    deleted, accepted = [], []
    marker = None
    while True:
        page = objects.CreateRecord.list_page(context, marker=marker,
                                              limit=_PAGE)
        if not page:
            return deleted, accepted
        for record in page:
            verdict, servers = _record_verdict(context, cell0, record,
                                               before)
            if verdict == ACCEPT:
                if not dry_run:
                    try:
                        _accept_from_cell0(record, servers)
                    except exception.CreateRecordNotFound:
                        continue  # deleted meanwhile (the server was)
                accepted.append(record.request_id)
            elif verdict == DELETE and (dry_run or _delete_unchanged(
                    context, models.CreateRecord, record.id,
                    {'status': record.status,
                     'updated_at': _naive(record.updated_at)})):
                deleted.append(record.request_id)
        marker = page[-1].id


def purge_journals(context, before, dry_run=False):
    """Purge finished move journals; the instance uuids deleted."""
    deleted = []
    marker = 0
    while True:
        with db_api.reader(context) as session:
            rows = session.query(models.MoveJournal).filter(
                models.MoveJournal.status != fields.MoveStatus.IN_PROGRESS,
                models.MoveJournal.id > marker).order_by(
                    models.MoveJournal.id).limit(_PAGE).all()
        if not rows:
            return deleted
        for row in rows:
            journal = objects.MoveJournal._from_db_object(
                context, objects.MoveJournal(), row)
            if not _older(journal, before) or (
                    journal.deleted_after_hand_off()) or (
                    nova_servers.still_in_cell0_or_building(
                        context, [journal.instance_uuid])):
                # A hand-off whose server was deleted is heal's to remove
                # once it released what the conductor may have claimed.
                continue
            # A move started again meanwhile changes status and attempts.
            if dry_run or _delete_unchanged(
                    context, models.MoveJournal, journal.id,
                    {'status': journal.status,
                     'attempts': journal.attempts,
                     'updated_at': _naive(journal.updated_at)}):
                deleted.append(journal.instance_uuid)
        marker = rows[-1].id


def purge_announcements(context, before, dry_run=False):
    """Purge the relay's announcements: '<instance uuid> <message id>'s.

    Only announced ones, or ones whose relay's lease ran out, last
    changed before *before* and at least ANNOUNCEMENT_GRACE ago; the
    delete compares the lease token and state purge read.
    """
    now = timeutils.utcnow()
    cutoff = min(before, now - ANNOUNCEMENT_GRACE)
    model = models.RelayAnnouncement
    deleted = []
    marker = 0
    while True:
        with db_api.reader(context) as session:
            rows = session.query(model).filter(
                model.id > marker, model.updated_at < cutoff).order_by(
                    model.id).limit(_PAGE).all()
        if not rows:
            return deleted
        for row in rows:
            if (row.state == fields.AnnouncementState.ANNOUNCING and
                    row.lease_expires_at > now):
                continue  # a relay announces it right now
            if dry_run or _delete_unchanged(
                    context, model, row.id,
                    {'state': row.state, 'lease_token': row.lease_token}):
                deleted.append('%s %s' % (row.instance_uuid,
                                          row.message_id))
        marker = rows[-1].id


def purge(context, before=None, dry_run=False):
    """Delete (or with *dry_run* only list) what is no longer needed.

    :param before: a naive UTC datetime; only rows last changed before it,
        of every kind: create records, move journals, stashed histories.
    :returns: {'create_records': [...], 'move_journal': [...],
        'server_histories': [...]} of the rows deleted (or that would be),
        'relay_announcements': [...] of the Aardvark relay's announcements
        ("<instance uuid> <message id>"),
        by request id and instance uuid (a stashed history is deleted only
        once written back into its server's cell),
        'accepted_create_records': pending records completed (or that
        would be) because their servers are in cell0, and
        'unmapped_server_histories': stashes kept although their server
        has no mapping any more (archived before its history could be
        written back).
    """
    admin = context.elevated()
    if before is None:
        before = timeutils.utcnow()
    records, accepted = purge_records(admin, before, dry_run=dry_run)
    journals = purge_journals(admin, before, dry_run=dry_run)
    announcements = purge_announcements(admin, before, dry_run=dry_run)
    # Never dropped unwritten: archive moves what is written back with
    # the server, into the shadow tables.
    histories, unmapped = server_history.write_back_or_keep(
        admin, dry_run=dry_run, before=before)
    for uuid in unmapped:
        LOG.warning('The history of server %s from cell0 is kept: the '
                    'server has no mapping any more (archived before its '
                    'history was written back)', uuid)
    return {'create_records': records, 'move_journal': journals,
            'relay_announcements': announcements,
            'accepted_create_records': accepted,
            'server_histories': histories,
            'unmapped_server_histories': unmapped}
