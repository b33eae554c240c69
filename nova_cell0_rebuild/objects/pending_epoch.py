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

"""PendingEpoch: the fence that makes one pending dispatcher act.

The tooz lock elects the dispatcher fast and cheaply, but a lock can be
held by two copies for a while (a redis key expiring under a paused
process). So a copy elected takes a new epoch here, and every dispatch
first renews the heartbeat where the epoch is still its own: zero rows
means a newer copy took over, and the old one stops serving.
"""

from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

#: Rounds of take() lost to other takers (each round one of them wins).
TAKE_ROUNDS = 10


def _now(now):
    """Naive UTC in whole seconds, as every backend stores it."""
    now = now if now is not None else timeutils.utcnow()
    return timeutils.normalize_time(now).replace(microsecond=0)


@base.Cell0RebuildObjectRegistry.register
class PendingEpoch(base.Cell0RebuildObject):
    """The current epoch of a service name, its holder and heartbeat."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'name': fields.StringField(),
        'epoch': fields.NonNegativeIntegerField(),
        'holder': fields.StringField(),
        'heartbeat_at': fields.DateTimeField(),
        'beats': fields.NonNegativeIntegerField(),
    })

    @classmethod
    def get(cls, context, name):
        """The epoch row of *name*, or None if no copy ever took one."""
        with db_api.reader(context) as session:
            row = session.query(models.PendingEpoch).filter_by(
                name=name).first()
        if row is None:
            return None
        epoch = cls()
        for key in epoch.fields:
            setattr(epoch, key, row[key])
        epoch._context = context
        epoch.obj_reset_changes()
        return epoch

    @classmethod
    def take(cls, context, name, holder, now=None):
        """Become the acting copy of *name*: a new epoch, returned.

        The epoch is incremented in the database (``epoch + 1`` under the
        row's lock, read back in the same transaction), so concurrent
        takers each get a distinct epoch and the last to commit holds the
        current one; the first taker of a name inserts epoch 1.

        :raises: DBDeadlock when refused at each retry and each of
            ``TAKE_ROUNDS`` rounds (a Galera cluster overloaded by takers).
        """
        now = _now(now)
        for _round in range(TAKE_ROUNDS):
            try:
                epoch = cls._increment_in_db(context, name, holder, now)
                if epoch is None:
                    epoch = cls._insert_in_db(context, name, holder, now)
            except db_exc.DBDuplicateEntry:
                continue  # another copy inserted it first: increment it
            except db_exc.DBDeadlock:
                if _round == TAKE_ROUNDS - 1:
                    raise
                continue
            if epoch is not None:
                return epoch
        raise db_exc.DBDeadlock()

    @staticmethod
    @db_api.retry_on_deadlock
    def _increment_in_db(context, name, holder, now):
        """epoch + 1, or None when the name has no row yet."""
        with db_api.writer(context) as session:
            query = session.query(models.PendingEpoch).filter_by(name=name)
            updated = query.update(
                {'epoch': models.PendingEpoch.epoch + 1, 'holder': holder,
                 'heartbeat_at': now, 'updated_at': now},
                synchronize_session=False)
            if updated != 1:
                return None
            # Our own write, whatever committed meanwhile: we hold the
            # row's lock until this transaction ends.
            return query.with_entities(models.PendingEpoch.epoch).scalar()

    @staticmethod
    @db_api.retry_on_deadlock
    def _insert_in_db(context, name, holder, now):
        with db_api.writer(context) as session:
            session.add(models.PendingEpoch(
                name=name, epoch=1, holder=holder, heartbeat_at=now, beats=0,
                created_at=now, updated_at=now))
            session.flush()
        return 1

    @classmethod
    def heartbeat(cls, context, name, epoch, now=None):
        """Renew the heartbeat if *epoch* is still the current one.

        :returns: False when deposed (a newer epoch was taken, or the row
            is gone): stop serving. A write refused by Galera at each
            retry also answers False: the safe side. Each heartbeat
            changes the row (``beats``): on Galera an UPDATE that changes
            nothing is not certified, so on a node that has not applied
            a newer epoch yet it would match the old one and answer True.
        """
        try:
            return cls._heartbeat_in_db(context, name, epoch, _now(now))
        except db_exc.DBDeadlock:
            return False

    @staticmethod
    @db_api.retry_on_deadlock
    def _heartbeat_in_db(context, name, epoch, now):
        with db_api.writer(context) as session:
            return session.query(models.PendingEpoch).filter_by(
                name=name, epoch=epoch).update(
                    {'heartbeat_at': now, 'updated_at': now,
                     'beats': models.PendingEpoch.beats + 1},
                    synchronize_session=False) == 1
