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

A create record is needed while a server of its create waits in cell0 or
in a BuildRequest; a move journal while its server exists and the move is
in progress. Everything else older than a cutoff can go.
"""

import datetime

from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import server_history

_PAGE = 200
#: A record still pending this long belongs to a create nova-api never
#: answered (it stopped): Nova answers creates in seconds.
PENDING_GRACE = datetime.timedelta(hours=1)


def _older(obj, before):
    stamp = obj.updated_at or obj.created_at
    return before is None or (stamp is not None and
                              stamp.replace(tzinfo=None) < before)


def stale_records(context, before):
    """Create records whose servers all landed or are gone."""
    marker = None
    while True:
        page = objects.CreateRecord.list_page(context, marker=marker,
                                              limit=_PAGE)
        if not page:
            return
        for record in page:
            if record.status != fields.CreateRecordStatus.ACCEPTED:
                # Pending: Nova has not answered yet, or never will.
                if _older(record, min(before, timeutils.utcnow() -
                                      PENDING_GRACE)):
                    yield record
                continue
            if _older(record, before) and not (
                    nova_servers.still_in_cell0_or_building(
                        context, record_keeping.servers_of(context,
                                                           record))):
                yield record
        marker = page[-1].id


def stale_journals(context, before):
    """Finished move journals whose servers landed or are gone."""
    marker = 0
    while True:
        with db_api.reader(context) as session:
            rows = session.query(models.MoveJournal).filter(
                models.MoveJournal.status != fields.MoveStatus.IN_PROGRESS,
                models.MoveJournal.id > marker).order_by(
                    models.MoveJournal.id).limit(_PAGE).all()
        if not rows:
            return
        for row in rows:
            journal = objects.MoveJournal._from_db_object(
                context, objects.MoveJournal(), row)
            if _older(journal, before) and not (
                    nova_servers.still_in_cell0_or_building(
                        context, [journal.instance_uuid])):
                yield journal
        marker = rows[-1].id


def purge(context, before=None, dry_run=False):
    """Delete (or with *dry_run* only list) what is no longer needed.

    :param before: a naive UTC datetime; only rows last changed before it.
    :returns: {'create_records': [...], 'move_journal': [...]} of what was
        (or would be) deleted, by request id and instance uuid.
    """
    admin = context.elevated()
    if before is None:
        before = timeutils.utcnow()
    records = list(stale_records(admin, before))
    journals = list(stale_journals(admin, before))
    histories = list(server_history.stale(admin))
    if not dry_run:
        for obj in records + journals + histories:
            obj.destroy()
    return {'create_records': [r.request_id for r in records],
            'move_journal': [j.instance_uuid for j in journals],
            'server_histories': [h.instance_uuid for h in histories]}
