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

"""MoveJournal: how far a server's move out of cell0 got, and who moves it.

A move in progress is a lease. Its holder (the rebuild that started it,
or heal once it took it over) is named by ``owner`` and identified by a
fencing token, ``lease_token``: every write of the holder is a
compare-and-swap on that token and renews the lease until
``lease_expires_at``. Taking a lease over gives it a new token, so a
holder that lost it (a nova-api that was only slow, not dead) fails its
next write and stops, instead of acting on a server someone else now
moves or heals.
"""

import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils
from oslo_utils import versionutils
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

Status = fields.MoveStatus
Step = fields.MoveStep

#: Default of ``MoveJournal.start(current=...)``: the journal is read there.
UNREAD = object()

#: The steps from which a move may have sent its cast.
MAY_BE_CAST = (Step.CASTING, Step.CAST_SENT)

#: How ``last_error`` of a hand-off whose server was deleted starts
#: (:meth:`MoveJournal.keep_after_delete`). Kept as it is across releases:
#: heal finds such journals by it.
DELETED_MARK = 'deleted after its hand-off:'
DELETED_AFTER_HAND_OFF = (
    '%s the server was deleted while Nova\'s conductor had its hand-off; '
    'kept until [cell0_rebuild] hand_off_timeout after the cast, when heal '
    'removes what a conductor that dropped the hand-off left in placement'
    % DELETED_MARK)


def _lease(now, lease_seconds):
    """The columns a write renewing a lease at *now* sets."""
    return {'updated_at': now,
            'lease_expires_at': now + datetime.timedelta(
                seconds=lease_seconds)}


@base.Cell0RebuildObjectRegistry.register
class MoveJournal(base.Cell0RebuildObject):
    """One server's latest move out of cell0, step by step.

    Every change is a compare-and-swap on the row and its fencing token,
    so two actors never both believe they own a move.
    """

    # Version 1.0: Initial version
    # Version 1.1: Added owner, lease_token and lease_expires_at
    VERSION = '1.1'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        'request_id': fields.StringField(nullable=True),
        'status': fields.MoveStatusField(),
        'step': fields.MoveStepField(),
        'attempts': fields.NonNegativeIntegerField(),
        'last_error': fields.StringField(nullable=True),
        'fault_message': fields.StringField(nullable=True),
        'started_at': fields.DateTimeField(nullable=True),
        'finished_at': fields.DateTimeField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'lease_token': fields.NonNegativeIntegerField(),
        'lease_expires_at': fields.DateTimeField(nullable=True),
    })

    #: Seconds each write of the holder renews the lease for; set by
    #: start() and take_over(). None: writes do not renew it.
    lease_seconds = None

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target_version = versionutils.convert_version_to_tuple(
            target_version)
        if target_version < (1, 1):
            for key in ('owner', 'lease_token', 'lease_expires_at'):
                primitive.pop(key, None)

    @staticmethod
    def _from_db_object(context, journal, db_journal):
        for key in journal.fields:
            setattr(journal, key, db_journal[key])
        journal._context = context
        journal.obj_reset_changes()
        return journal

    @staticmethod
    def _get_from_db(context, instance_uuid):
        with db_api.reader(context) as session:
            return session.query(models.MoveJournal).filter_by(
                instance_uuid=instance_uuid).first()

    @classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The journal of a server, or None if it never moved."""
        db_journal = cls._get_from_db(context, instance_uuid)
        if db_journal is None:
            return None
        return cls._from_db_object(context, cls(), db_journal)

    @staticmethod
    def _get_all_from_db(context, instance_uuids):
        with db_api.reader(context) as session:
            return session.query(models.MoveJournal).filter(
                models.MoveJournal.instance_uuid.in_(instance_uuids)).all()

    @classmethod
    def get_by_instance_uuids(cls, context, instance_uuids):
        """The journals of servers that moved, in one query.

        :returns: {instance uuid: MoveJournal}; servers that never moved
            are not in it.
        """
        if not instance_uuids:
            return {}
        return {row.instance_uuid: cls._from_db_object(context, cls(), row)
                for row in cls._get_all_from_db(context,
                                                list(instance_uuids))}

    @staticmethod
    def _expired(lease_seconds, now):
        """SQL criteria of a lease that expired (what lease_expired says).

        Both the holder's own expiry and the reader's lease time must have
        passed since the last write: rows of a holder that does not write
        an expiry (a plugin older than leases) still count as alive while
        they are updated.
        """
        row = models.MoveJournal
        return [row.status == Status.IN_PROGRESS,
                row.updated_at <= now - datetime.timedelta(
                    seconds=lease_seconds),
                sa.or_(row.lease_expires_at.is_(None),
                       row.lease_expires_at <= now)]

    @classmethod
    def list_expired(cls, context, lease_seconds, instance_uuid=None,
                     limit=None):
        """Moves in progress whose lease expired: interrupted moves."""
        with db_api.reader(context) as session:
            query = session.query(models.MoveJournal).filter(
                *cls._expired(lease_seconds, timeutils.utcnow()))
            if instance_uuid is not None:
                query = query.filter_by(instance_uuid=instance_uuid)
            query = query.order_by(models.MoveJournal.updated_at)
            if limit:
                query = query.limit(limit)
            return [cls._from_db_object(context, cls(), row)
                    for row in query.all()]

    def lease_expired(self, lease_seconds):
        """Whether this move is in progress but its holder stopped renewing
        its lease: it was interrupted (what :meth:`list_expired` selects).
        """
        if self.status != Status.IN_PROGRESS:
            return False
        now = timeutils.utcnow()
        updated = self.updated_at.replace(tzinfo=None)
        if (now - updated).total_seconds() < lease_seconds:
            return False
        return (self.lease_expires_at is None or
                self.lease_expires_at.replace(tzinfo=None) <= now)

    @classmethod
    def start(cls, context, instance_uuid, lease_seconds, owner=None,
              request_id=None, fault_message=None, current=UNREAD):
        """Start a move of a server: the journal row is claimed.

        :param lease_seconds: how long the move holds its lease without a
            write; each write renews it.
        :param owner: who moves it (host, process, request), for operators.
        :param fault_message: the fault the server was buried with.
        :param current: the server's journal (or None) if the caller has
            just read it; read here otherwise. A stale value is harmless:
            the write is a compare-and-swap on it.
        :returns: the journal, in progress at step ``claimed``, holding a
            new lease.
        :raises: MoveInProgress if another move of the server holds its
            lease; MoveInterrupted (carrying the journal) if one was left
            in progress with an expired lease and must be healed first.
        """
        now = timeutils.utcnow()
        fresh = dict(_lease(now, lease_seconds),
                     status=Status.IN_PROGRESS, step=Step.CLAIMED,
                     request_id=request_id, last_error=None,
                     fault_message=fault_message, owner=owner,
                     started_at=now, finished_at=None)
        if current is UNREAD:
            current = cls.get_by_instance_uuid(context, instance_uuid)
        if current is None:
            row = cls._insert_in_db(context, instance_uuid, now, fresh)
            journal = cls._from_db_object(context, cls(), row)
            journal.lease_seconds = lease_seconds
            return journal
        if current.lease_expired(lease_seconds):
            raise exception.MoveInterrupted(current)
        if current.status == Status.IN_PROGRESS:
            raise exception.MoveInProgress(uuid=instance_uuid)
        fresh['attempts'] = current.attempts + 1
        fresh['lease_token'] = current.lease_token + 1
        cls._restart_in_db(context, current, fresh)
        current._set(context, fresh)
        current.lease_seconds = lease_seconds
        return current

    @staticmethod
    @db_api.retry_on_deadlock
    def _insert_in_db(context, instance_uuid, now, fresh):
        """The first move of a server: its row, unless another wrote it.

        Retried on DBDeadlock: a retry after losing to another node's
        INSERT finds its row (DBDuplicateEntry).
        """
        try:
            with db_api.writer(context) as session:
                row = models.MoveJournal(instance_uuid=instance_uuid,
                                         attempts=1, created_at=now,
                                         lease_token=1, **fresh)
                session.add(row)
                session.flush()
        except db_exc.DBDuplicateEntry:
            raise exception.MoveInProgress(uuid=instance_uuid)
        return row

    @staticmethod
    @db_api.retry_on_deadlock
    def _restart_in_db(context, current, fresh):
        """A new move of a server whose last one ended, by compare-and-swap.
        """
        with db_api.writer(context) as session:
            updated = session.query(models.MoveJournal).filter_by(
                id=current.id, status=current.status,
                lease_token=current.lease_token).update(
                    fresh, synchronize_session=False)
        if updated != 1:
            raise exception.MoveInProgress(uuid=current.instance_uuid)

    def take_over(self, owner, lease_seconds):
        """Take the expired lease of an interrupted move (heal does).

        A new fencing token makes every later write of the former holder
        fail, so from here on only the new holder acts on the server.

        :raises: LeaseHeld when the lease is alive (the move was renewed
            since it was read), was taken by someone else, or the move
            ended or was forgotten meanwhile.
        """
        values = self._take_over_in_db(owner, lease_seconds)
        self._set(self._context, values)
        self.lease_seconds = lease_seconds

    def _take_over_in_db(self, owner, lease_seconds):
        return self._take_lease_in_db(
            owner, lease_seconds,
            lambda now: self._expired(lease_seconds, now))

    @db_api.retry_on_deadlock
    def _take_lease_in_db(self, owner, lease_seconds, criteria, **changes):
        """Take the move under a new fencing token, by compare-and-swap.

        :param criteria: called with the time; SQL criteria the row must
            also meet, besides being the row as this journal read it.
        :param changes: other columns the taking sets.
        :raises: LeaseHeld when the row is not that any more.
        """
        now = timeutils.utcnow()
        values = dict(_lease(now, lease_seconds), owner=owner,
                      lease_token=self.lease_token + 1, **changes)
        with db_api.writer(self._context) as session:
            updated = session.query(models.MoveJournal).filter(
                models.MoveJournal.id == self.id,
                models.MoveJournal.status == self.status,
                models.MoveJournal.step == self.step,
                models.MoveJournal.lease_token == self.lease_token,
                *criteria(now)).update(values, synchronize_session=False)
        if updated != 1:
            raise exception.LeaseHeld(uuid=self.instance_uuid)
        return values

    @staticmethod
    def _handed_off_before(cutoff):
        """SQL criteria of a move done (its cast sent) before *cutoff*.

        A move left at ``casting`` is not one: its holder may still be
        inside the cast (oslo.messaging retries a publish while RabbitMQ
        is away), so when the cast leaves is unknown.
        """
        row = models.MoveJournal
        return [row.status == Status.DONE, row.step == Step.CAST_SENT,
                row.finished_at <= cutoff]

    @classmethod
    def list_deleted_after_hand_off_before(cls, context, cutoff):
        """The hand-offs before *cutoff* whose server was deleted during
        them (:meth:`keep_after_delete`), oldest first.

        One statement; journals of servers deleted this way are few, and
        each is removed by the heal that finds it.
        """
        row = models.MoveJournal
        with db_api.reader(context) as session:
            query = session.query(row).filter(
                row.last_error.like(DELETED_MARK + '%'),
                row.status == Status.DONE,
                row.step.in_(MAY_BE_CAST),
                row.finished_at <= cutoff)
            return [cls._from_db_object(context, cls(), found)
                    for found in query.order_by(row.id)]

    def deleted_after_hand_off(self):
        """Whether the server was deleted during this hand-off."""
        return (self.last_error or '').startswith(DELETED_MARK)

    def may_be_cast(self):
        """Whether the conductor may have been sent the server: a move at
        ``casting`` (its holder inside the cast, or stopped there) or
        past it, and nothing moved the server since.
        """
        return self.step in MAY_BE_CAST and self.status in (
            Status.IN_PROGRESS, Status.DONE)

    def keep_after_delete(self, fenced=True):
        """Keep the hand-off of a server Nova deleted, marked, as done.

        Once the cast may be sent, what the conductor's scheduler claims in
        placement is the conductor's to release when it finds the
        BuildRequest gone; a conductor that drops the hand-off first
        (its database failing over) never does, and the server, deleted,
        has no BuildRequest left for heal's dropped hand-offs to find. So
        the journal stays, ``done`` with :data:`DELETED_MARK`, for heal to
        release the claim once ``hand_off_timeout`` passed after the cast
        (or after now, for a move still inside it). A compare-and-swap
        with the move's step and a new fencing token, as
        :meth:`destroy_if_unchanged`: the holder's next write fails.

        :param fenced: False: whatever the row became since it was read
            (the last resort of a DELETE that lost each of its reads).
        :raises: JournalConflict when the move moved on since it was read
            (also when Galera refused the write at each retry).
        """
        now = timeutils.utcnow()
        values = {'status': Status.DONE, 'last_error': DELETED_AFTER_HAND_OFF,
                  'lease_token': self.lease_token + 1, 'updated_at': now,
                  'finished_at': self.finished_at or now}
        try:
            updated = self._keep_in_db(values, fenced)
        except db_exc.DBDeadlock:
            updated = 0
        if updated != 1:
            raise exception.JournalConflict(uuid=self.instance_uuid)
        if not fenced:
            # The token it wrote is the row's plus one, unknown here.
            del values['lease_token']
        self._set(self._context, values)

    @db_api.retry_on_deadlock
    def _keep_in_db(self, values, fenced):
        criteria = {'id': self.id}
        if fenced:
            criteria.update(status=self.status, step=self.step,
                            lease_token=self.lease_token)
        else:
            values = dict(values, lease_token=models.MoveJournal.lease_token
                          + 1)
        with db_api.writer(self._context) as session:
            return session.query(models.MoveJournal).filter_by(
                **criteria).update(values, synchronize_session=False)

    @classmethod
    def list_handed_off_before(cls, context, cutoff, instance_uuids):
        """The moves of *instance_uuids* handed to the conductor before
        *cutoff* (a naive UTC datetime): see :meth:`reopen`.
        """
        if not instance_uuids:
            return []
        with db_api.reader(context) as session:
            query = session.query(models.MoveJournal).filter(
                models.MoveJournal.instance_uuid.in_(list(instance_uuids)),
                *cls._handed_off_before(cutoff))
            return [cls._from_db_object(context, cls(), row)
                    for row in query.order_by(models.MoveJournal.id)]

    def reopen(self, owner, lease_seconds, cutoff, error):
        """Take back a hand-off the conductor dropped (heal does).

        The journal goes back in progress at ``cell0_rows_removed`` (the
        server is its BuildRequest only, which undo buries in cell0 again)
        under a new lease and fencing token, if it is still the hand-off
        that was read, made before *cutoff*: one heal reopens it; a new
        move, another heal or the DELETE that forgets the journal makes
        this fail.

        :param error: why, kept as ``last_error`` until the move ends: a
            heal that takes the reopened move over knows from it that
            placement may hold an allocation of the dropped hand-off.
        :raises: LeaseHeld when the journal changed since it was read (a
            new move, another heal, a DELETE that forgot it).
        """
        values = self._reopen_in_db(owner, lease_seconds, cutoff, error)
        self._set(self._context, values)
        self.lease_seconds = lease_seconds

    def _reopen_in_db(self, owner, lease_seconds, cutoff, error):
        return self._take_lease_in_db(
            owner, lease_seconds,
            lambda now: self._handed_off_before(cutoff),
            last_error=error, status=Status.IN_PROGRESS,
            step=Step.CELL0_ROWS_REMOVED, finished_at=None)

    def _set(self, context, values):
        for key, value in values.items():
            setattr(self, key, value)
        self._context = context
        self.obj_reset_changes()

    def bind(self, context):
        """Make the journal's writes use *context* from now on.

        A fenced write made inside an API-database transaction of Nova's
        joins it only with the same context (when the plugin's tables
        share that database): the fence and the write it guards then
        commit or roll back together.
        """
        self._context = context

    def _swap(self, expected, values):
        """Write *values* if this holder still holds the lease (fenced).

        Inside a transaction open on the journal's context (see
        :meth:`bind`) the write joins it, and the journal's fields change
        only once that transaction committed: its opener retries it whole
        on DBDeadlock, with the journal as it was. Alone, it is its own
        transaction, retried on DBDeadlock.
        """
        if db_api.in_transaction(self._context):
            values = self._swap_in_db(expected, values)
            db_api.after_commit(self._context, lambda: self._set(
                self._context, values))
            return
        self._set(self._context, self._swap_alone(expected, values))

    @db_api.retry_on_deadlock
    def _swap_alone(self, expected, values):
        return self._swap_in_db(expected, values)

    def _swap_in_db(self, expected, values):
        values = dict(values)
        now = timeutils.utcnow()
        values['updated_at'] = now
        if self.lease_seconds is not None:
            values.update(_lease(now, self.lease_seconds))
        # beats changes the row even when nothing else does (a heartbeat
        # in the second of the write before it): Galera certifies only a
        # change, and a no-op on a node that had not applied a take-over
        # or a DELETE's forget yet would pass the fence.
        with db_api.writer(self._context) as session:
            updated = session.query(models.MoveJournal).filter_by(
                id=self.id, lease_token=self.lease_token,
                **expected).update(
                    dict(values, beats=models.MoveJournal.beats + 1),
                    synchronize_session=False)
            if updated != 1:
                # Nothing written; in a joined transaction this rolls the
                # writes it guards back with it.
                raise exception.JournalConflict(uuid=self.instance_uuid)
        return values

    def heartbeat(self):
        """Renew the lease; proves it is still held before a step acts.

        :raises: JournalConflict when the lease was lost (taken over, or
            the journal forgotten with its deleted server).
        """
        self._swap({'status': Status.IN_PROGRESS, 'step': self.step}, {})

    def advance(self, step):
        """Record that the move reached *step* (from the step it was at)."""
        self._swap({'status': Status.IN_PROGRESS, 'step': self.step},
                   {'step': step})

    def record_error(self, error):
        """Note an error that did not end the move (it went forward)."""
        self._swap({}, {'last_error': error})

    def finish(self, status, error=None, step=None):
        """End the move as done or rolled back (at *step*, if given)."""
        values = {'status': status, 'finished_at': timeutils.utcnow(),
                  'last_error': error}
        if step is not None:
            values['step'] = step
        self._swap({'status': Status.IN_PROGRESS}, values)

    def destroy(self):
        """Forget the server's moves (the server is gone)."""
        with db_api.writer(self._context) as session:
            session.query(models.MoveJournal).filter_by(
                id=self.id).delete(synchronize_session=False)

    def destroy_if_unchanged(self):
        """Forget the server's moves if none moved on since this was read.

        A compare-and-swap with the move's own steps and its lease: once
        this succeeds the move's next fenced write fails, so a move that
        had not reached ``casting`` never casts. Heartbeats do not count
        as moving on: they change neither the step nor the token.

        :raises: JournalConflict if the journal changed (or is gone).
        """
        self._destroy_if_unchanged_in_db()

    @db_api.retry_on_deadlock
    def _destroy_if_unchanged_in_db(self):
        with db_api.writer(self._context) as session:
            deleted = session.query(models.MoveJournal).filter_by(
                id=self.id, status=self.status, step=self.step,
                lease_token=self.lease_token).delete(
                    synchronize_session=False)
        if deleted != 1:
            raise exception.JournalConflict(uuid=self.instance_uuid)
