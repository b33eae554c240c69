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

"""The Aardvark relay's record of what it announced, shared by all relays.

Aardvark deletes pre-emptible servers for each announcement, so a burial
must be announced once, whichever relay of a pool gets its notification,
and however often RabbitMQ delivers it. Before announcing, a relay claims
the burial (its server and the message id of Nova's notification, which a
redelivery keeps) by inserting its row: of two relays, one inserts, the
other finds the row. The row is a lease: ``announcing`` while its holder
announces, ``announced`` once it did. A lease that ran out (its relay died
mid-announcement) is taken over, by compare-and-swap on its token, by the
relay that has the notification then.

On a Galera cluster the loser of two writes through different nodes gets
DBDeadlock at COMMIT; the write is retried, and one still refused counts
as lost to the other relay: the burial is held by it.
"""

import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

State = fields.AnnouncementState

#: What a claim found.
CLAIMED = 'claimed'  # the row is ours, new: announce
TAKEN_OVER = 'taken over'  # its holder's lease ran out: announce again
HELD = 'held'  # another relay holds it now: ask again later
ANNOUNCED = 'announced'  # announced already: do not


def _expiry(now, lease_seconds):
    return now + datetime.timedelta(seconds=lease_seconds)


@base.Cell0RebuildObjectRegistry.register
class RelayAnnouncement(base.Cell0RebuildObject):
    """One burial, as the relays announce it."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        'message_id': fields.StringField(),
        'state': fields.AnnouncementStateField(),
        'owner': fields.StringField(),
        'lease_token': fields.NonNegativeIntegerField(),
        'lease_expires_at': fields.DateTimeField(),
        'announced_at': fields.DateTimeField(nullable=True),
    })

    @staticmethod
    def _from_db_object(context, announcement, row):
        for key in announcement.fields:
            setattr(announcement, key, row[key])
        announcement._context = context
        announcement.obj_reset_changes()
        return announcement

    @classmethod
    def claim(cls, context, instance_uuid, message_id, owner,
              lease_seconds):
        """Claim a burial before announcing it.

        :returns: (one of CLAIMED, TAKEN_OVER, HELD, ANNOUNCED, the
            RelayAnnouncement as found or written, None when HELD after
            DBDeadlock).
        """
        try:
            outcome, row = cls._claim_in_db(context, instance_uuid,
                                            message_id, owner,
                                            lease_seconds)
        except db_exc.DBDeadlock:
            # Still refused once retried: on a Galera cluster, another
            # relay's write through another node won each time.
            return HELD, None
        if row is None:
            return outcome, None
        return outcome, cls._from_db_object(context, cls(), row)

    @staticmethod
    @db_api.retry_on_deadlock
    def _claim_in_db(context, instance_uuid, message_id, owner,
                     lease_seconds):
        now = timeutils.utcnow()
        try:
            with db_api.writer(context) as session:
                row = models.RelayAnnouncement(
                    instance_uuid=instance_uuid, message_id=message_id,
                    state=State.ANNOUNCING, owner=owner, lease_token=1,
                    lease_expires_at=_expiry(now, lease_seconds),
                    created_at=now, updated_at=now)
                session.add(row)
                session.flush()
            return CLAIMED, row
        except db_exc.DBDuplicateEntry:
            pass
        return RelayAnnouncement._take_over_in_db(
            context, instance_uuid, message_id, owner, lease_seconds, now)

    @staticmethod
    def _take_over_in_db(context, instance_uuid, message_id, owner,
                         lease_seconds, now):
        """The row another relay wrote: announced, held, or ours again."""
        with db_api.writer(context) as session:
            query = session.query(models.RelayAnnouncement).filter_by(
                instance_uuid=instance_uuid, message_id=message_id)
            row = query.first()
            if row is None:
                # Purged between our INSERT and this read: ask again.
                return HELD, None
            if row.state == State.ANNOUNCED:
                return ANNOUNCED, row
            if row.lease_expires_at > now:
                return HELD, row
            values = {'owner': owner, 'lease_token': row.lease_token + 1,
                      'lease_expires_at': _expiry(now, lease_seconds),
                      'updated_at': now}
            updated = query.filter_by(
                id=row.id, state=State.ANNOUNCING,
                lease_token=row.lease_token).update(
                    values, synchronize_session=False)
            if updated != 1:
                return HELD, row
            for key, value in values.items():
                setattr(row, key, value)
        return TAKEN_OVER, row

    def mark_announced(self):
        """Record that every event was published.

        :returns: False when the lease was taken over meanwhile (this
            relay took longer than its lease): the other relay may
            announce it again.
        """
        now = timeutils.utcnow()
        if not self._mark_in_db(now):
            return False
        self.state = State.ANNOUNCED
        self.announced_at = now
        self.updated_at = now
        self.obj_reset_changes()
        return True

    @db_api.retry_on_deadlock
    def _mark_in_db(self, now):
        with db_api.writer(self._context) as session:
            return session.query(models.RelayAnnouncement).filter_by(
                id=self.id, state=State.ANNOUNCING,
                lease_token=self.lease_token).update(
                    {'state': State.ANNOUNCED, 'announced_at': now,
                     'updated_at': now},
                    synchronize_session=False) == 1
