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

"""Cell0Wait: a buried server that waits for room (issue 27), and its shape.

One row per server. The API opens a wait (``PUT .../wait``, or the pending
service's intake from a create's metadata); the one dispatcher of the
pending service dispatches it, backs it off, notes why it waits, ends it.
Every write is a compare-and-swap on the row's ``state`` and fencing token
``lease_token`` as this object read them: a dispatch and a restart give a
new token, so a holder that read the row before them (a deposed
dispatcher, a slow API request) loses its next write instead of acting on
a wait someone else now serves. A lost write returns False, never raises:
losing is an outcome of a race, not an error.

On a Galera cluster the loser of two writes through different nodes gets
DBDeadlock at COMMIT; the write is retried, and one still refused counts
as lost, as ``objects/relay_announcement.py`` reads it. Galera certifies
only an UPDATE that changes the row: the writes that fence (``dispatch``,
``back_off``, ``end``, a restart) always change ``state`` or the token;
``note``, ``set_shape``, ``record_request_id`` and the update of an open
wait may change nothing and then answer True on a node that has not yet
applied another node's write, which costs nothing: the next fencing
write of that holder is certified and loses.

``Cell0WaitShape`` holds each request shape once, content-addressed: the
placement query string(s) a server would be scheduled with, keyed by their
SHA-256.
"""

import datetime
import hashlib
import json

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

State = fields.WaitState

#: How often open() reads the row again after losing a race to another
#: writer. Each round one of the racers wins, and an update of a wait that
#: is not ended never makes another racer lose: a few rounds converge.
OPEN_ROUNDS = 10


def _naive(value):
    """A naive UTC datetime in whole seconds, as every backend stores it
    (MySQL's DATETIME has no fraction: MariaDB truncates it, MySQL rounds
    it), so that the object equals the row it wrote. None stays None.
    """
    if value is None:
        return None
    return timeutils.normalize_time(value).replace(microsecond=0)


def _now(now=None):
    return _naive(now if now is not None else timeutils.utcnow())


@base.Cell0RebuildObjectRegistry.register
class Cell0Wait(base.Cell0RebuildObject):
    """One buried server's wait for room."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        # Who opted in.
        'user_id': fields.StringField(),
        'source': fields.WaitSourceField(),
        'state': fields.WaitStateField(),
        # The first burial of this wait: its place in the fair order.
        'queued_at': fields.DateTimeField(),
        'deadline': fields.DateTimeField(),
        'shape_key': fields.StringField(nullable=True),
        'shape_computed_at': fields.DateTimeField(nullable=True),
        'attempts': fields.NonNegativeIntegerField(),
        'next_attempt_at': fields.DateTimeField(nullable=True),
        'reason_code': fields.WaitReasonField(nullable=True),
        'last_reason': fields.StringField(nullable=True),
        'last_attempt_at': fields.DateTimeField(nullable=True),
        'last_request_id': fields.StringField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'lease_token': fields.NonNegativeIntegerField(),
        'lease_expires_at': fields.DateTimeField(nullable=True),
        'ended_at': fields.DateTimeField(nullable=True),
    })

    @staticmethod
    def _from_db_object(context, wait, row):
        for key in wait.fields:
            setattr(wait, key, row[key])
        wait._context = context
        wait.obj_reset_changes()
        return wait

    def _set(self, values):
        for key, value in values.items():
            setattr(self, key, value)
        self.obj_reset_changes()

    # Reads.

    @staticmethod
    def _get_from_db(context, instance_uuid):
        with db_api.reader(context) as session:
            return session.query(models.Cell0Wait).filter_by(
                instance_uuid=instance_uuid).first()

    @classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The wait of a server, or None if it never waited (or left)."""
        row = cls._get_from_db(context, instance_uuid)
        if row is None:
            return None
        return cls._from_db_object(context, cls(), row)

    @staticmethod
    def _get_all_from_db(context, instance_uuids):
        with db_api.reader(context) as session:
            return session.query(models.Cell0Wait).filter(
                models.Cell0Wait.instance_uuid.in_(instance_uuids)).all()

    @classmethod
    def get_by_instance_uuids(cls, context, instance_uuids):
        """The waits of many servers in one query (a page of the list API).

        :returns: {instance uuid: Cell0Wait}; servers without a wait are
            not in it. No query at all for no servers.
        """
        instance_uuids = list(instance_uuids)
        if not instance_uuids:
            return {}
        return {row.instance_uuid: cls._from_db_object(context, cls(), row)
                for row in cls._get_all_from_db(context, instance_uuids)}

    @classmethod
    def list_expired_dispatches(cls, context, now):
        """Dispatched waits whose dispatcher's lease ran out by *now*.

        A new dispatcher settles them (its predecessor died, or was
        deposed, before it saw how their rebuild ended).
        """
        row = models.Cell0Wait
        with db_api.reader(context) as session:
            rows = session.query(row).filter(
                row.state == State.DISPATCHED,
                sa.or_(row.lease_expires_at.is_(None),
                       row.lease_expires_at <= _naive(now))).order_by(
                row.id).all()
        return [cls._from_db_object(context, cls(), r) for r in rows]

    # Opening a wait: insert, restart an ended one, or update one open.

    @classmethod
    def open(cls, context, instance_uuid, project_id, user_id, source,
             queued_at, deadline, reason_code=None, last_reason=None):
        """Make a server wait, whatever its row was.

        No row: a new wait. An ended wait: restarted (state ``waiting``,
        new deadline, ``queued_at``, source, user and reason, attempts
        kept, a new fencing token so that a holder of the ended wait acts
        no more). A wait open (``waiting`` or ``dispatched``): its
        deadline, source, user and reason are replaced (``None`` clears
        the reason), nothing else; the dispatcher holding it is not fenced
        off, its back-off or end still applies.

        Concurrent opens of one server converge: a lost insert or
        compare-and-swap reads the row again and retries.

        :returns: the Cell0Wait as written.
        :raises: WaitContended if the row changed under each of
            ``OPEN_ROUNDS`` reads (not expected from a race of opens).
        """
        opening = {'user_id': user_id, 'source': source,
                   'deadline': _naive(deadline),
                   'reason_code': reason_code, 'last_reason': last_reason}
        cls._check(dict(opening, instance_uuid=instance_uuid,
                        project_id=project_id, queued_at=queued_at))
        for _round in range(OPEN_ROUNDS):
            wait = cls.get_by_instance_uuid(context, instance_uuid)
            if wait is None:
                new = cls.open_new(context, instance_uuid, project_id,
                                   user_id, source, queued_at, deadline,
                                   reason_code, last_reason)
                if new is not None:
                    return new
            elif wait.state == State.ENDED:
                if wait._swap(dict(
                        opening, state=State.WAITING, ended_at=None,
                        next_attempt_at=None, lease_expires_at=None,
                        queued_at=_naive(queued_at),
                        lease_token=wait.lease_token + 1)):
                    return wait
            elif wait._swap(opening):
                return wait
        raise exception.WaitContended(uuid=instance_uuid)

    @classmethod
    def open_new(cls, context, instance_uuid, project_id, user_id, source,
                 queued_at, deadline, reason_code=None, last_reason=None):
        """Start the first wait of a server: insert only.

        For the intake, which found no row: a row written since (a user's
        ``DELETE .../wait``, which writes an ended row for a server not
        yet taken in, or another intake) is the truth, and is never
        restarted as :meth:`open` restarts an ended wait.

        :returns: the Cell0Wait written, or None when a row exists.
        """
        opening = {'user_id': user_id, 'source': source,
                   'deadline': _naive(deadline), 'reason_code': reason_code,
                   'last_reason': last_reason,
                   'instance_uuid': instance_uuid,
                   'project_id': project_id, 'queued_at': queued_at}
        cls._check(opening)
        row = cls._insert(context, dict(opening,
                                        queued_at=_naive(queued_at)))
        return None if row is None else cls._from_db_object(
            context, cls(), row)

    @classmethod
    def cancel(cls, context, instance_uuid, project_id, user_id, queued_at,
               last_reason, now=None):
        """End a server's wait, or keep it from starting one.

        A server opted in at create has no row until the pending service
        takes it in: an ended row (``cancelled``) is then written, and the
        intake finds it (the row is the truth once it exists). An ended
        wait is left as it is. Concurrent writers converge as for
        :meth:`open`.

        :returns: the Cell0Wait, ended.
        :raises: WaitContended, as :meth:`open`.
        """
        cancelled = {'reason_code': fields.WaitReason.CANCELLED,
                     'last_reason': last_reason}
        for _round in range(OPEN_ROUNDS):
            wait = cls.get_by_instance_uuid(context, instance_uuid)
            if wait is None:
                ended_at = _now(now)
                row = cls._insert(context, dict(
                    cancelled, instance_uuid=instance_uuid,
                    project_id=project_id, user_id=user_id,
                    source=fields.WaitSource.API,
                    queued_at=_naive(queued_at), deadline=ended_at,
                    state=State.ENDED, ended_at=ended_at))
                if row is not None:
                    return cls._from_db_object(context, cls(), row)
            elif wait.state == State.ENDED or wait.end(
                    fields.WaitReason.CANCELLED, last_reason, now=now):
                return wait
        raise exception.WaitContended(uuid=instance_uuid)

    @staticmethod
    def _insert(context, values):
        """The row of a new wait, or None if another writer's is there."""
        try:
            return Cell0Wait._insert_in_db(context, values)
        except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
            # Another open inserted first (through another node of a
            # Galera cluster: refused at each retry). Read it.
            return None

    @staticmethod
    @db_api.retry_on_deadlock
    def _insert_in_db(context, values):
        now = _now()
        with db_api.writer(context) as session:
            row = models.Cell0Wait(**dict(
                {'state': State.WAITING, 'attempts': 0, 'lease_token': 0,
                 'created_at': now, 'updated_at': now}, **values))
            session.add(row)
            session.flush()
        return row

    # The compare-and-swap every write is.

    @classmethod
    def _check(cls, values):
        """Refuse values the fields refuse (an unknown reason code, say)
        before they are written, not once they are.

        :raises: ValueError
        """
        for key, value in values.items():
            cls.fields[key].coerce(None, key, value)

    def _swap(self, values):
        """Write *values* if the row is still as this object read it.

        :returns: True, with this object's fields set to what was
            written; False when another writer changed the row (or
            deleted it) since: nothing written.
        :raises: ValueError for a value the fields refuse (nothing
            written).
        """
        self._check(values)
        values = dict(values, updated_at=_now())
        try:
            won = self._swap_in_db(values)
        except db_exc.DBDeadlock:
            # Refused at each retry: another node's write won.
            return False
        if won:
            self._set(values)
        return won

    @db_api.retry_on_deadlock
    def _swap_in_db(self, values):
        with db_api.writer(self._context) as session:
            return session.query(models.Cell0Wait).filter_by(
                id=self.id, state=self.state,
                lease_token=self.lease_token).update(
                    values, synchronize_session=False) == 1

    # The dispatcher's writes.

    def dispatch(self, owner, lease_seconds, now=None):
        """Take a waiting server for one rebuild attempt.

        ``attempts`` counts it; the new fencing token makes every later
        write of a holder that read the wait before fail.

        :param owner: the dispatcher (host, process, epoch), for operators.
        :param lease_seconds: after this long without a settle, a new
            dispatcher may settle the wait (list_expired_dispatches).
        :returns: False if the wait is not waiting, or changed since read.
        """
        if self.state != State.WAITING:
            return False
        now = _now(now)
        return self._swap({
            'state': State.DISPATCHED, 'attempts': self.attempts + 1,
            'lease_token': self.lease_token + 1, 'owner': owner,
            'lease_expires_at': now + datetime.timedelta(
                seconds=lease_seconds),
            'last_attempt_at': now})

    def record_request_id(self, request_id):
        """Keep the request id of the rebuild this dispatch started."""
        return self._swap({'last_request_id': request_id})

    def back_off(self, reason_code, last_reason, next_attempt_at):
        """A dispatched attempt failed: wait again, until *next_attempt_at*.

        :param next_attempt_at: None: wait for capacity, no back-off.
        """
        if self.state != State.DISPATCHED:
            return False
        return self._swap({
            'state': State.WAITING, 'reason_code': reason_code,
            'last_reason': last_reason, 'lease_expires_at': None,
            'next_attempt_at': _naive(next_attempt_at)})

    def note(self, reason_code, last_reason):
        """Say why a waiting server is not rebuilt (e.g. no candidate)."""
        if self.state != State.WAITING:
            return False
        return self._swap({'reason_code': reason_code,
                           'last_reason': last_reason})

    def end(self, reason_code, last_reason, now=None):
        """End the wait (deadline, cancelled, refused); kept for the API."""
        if self.state == State.ENDED:
            return False
        return self._swap({
            'state': State.ENDED, 'reason_code': reason_code,
            'last_reason': last_reason, 'ended_at': _now(now),
            'next_attempt_at': None, 'lease_expires_at': None})

    def set_shape(self, shape_key, now=None):
        """Record the server's request shape (a Cell0WaitShape key)."""
        return self._swap({'shape_key': shape_key,
                           'shape_computed_at': _now(now)})

    def destroy(self):
        """Forget the wait (its server left cell0 or was deleted).

        Not fenced: whatever state it is in, the server is gone. Deleting
        a row already gone is not an error.
        """
        self._destroy_in_db(self._context, self.id)

    @staticmethod
    @db_api.retry_on_deadlock
    def _destroy_in_db(context, wait_id):
        with db_api.writer(context) as session:
            session.query(models.Cell0Wait).filter_by(id=wait_id).delete(
                synchronize_session=False)


@base.Cell0RebuildObjectRegistry.register
class Cell0WaitShape(base.Cell0RebuildObject):
    """A request shape: placement query string(s), stored once by key."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'shape_key': fields.StringField(),
        'queries': fields.ListOfStringsField(),
    })

    @classmethod
    def key_of(cls, queries):
        """The key of a shape: SHA-256 (hex) of its sorted queries as JSON,
        so that the order the queries are given in does not matter.
        """
        encoded = json.dumps(sorted(queries)).encode('utf-8')
        return hashlib.sha256(encoded).hexdigest()

    @classmethod
    def ensure(cls, context, queries):
        """Store a shape unless it is stored; returns its key.

        A row never changes (its key is its content), so a concurrent
        insert of the same shape is as good as ours.
        """
        queries = list(queries)
        key = cls.key_of(queries)
        if cls.get_queries(context, [key]):
            return key
        try:
            cls._insert_in_db(context, key, queries)
        except db_exc.DBDuplicateEntry:
            pass
        except db_exc.DBDeadlock:
            # Refused at each retry: another node's insert of it, if the
            # row is there now; anything else is an error.
            if not cls.get_queries(context, [key]):
                raise
        return key

    @staticmethod
    @db_api.retry_on_deadlock
    def _insert_in_db(context, key, queries):
        now = timeutils.utcnow()
        with db_api.writer(context) as session:
            session.add(models.Cell0WaitShape(
                shape_key=key, queries=json.dumps(queries),
                created_at=now, updated_at=now))
            session.flush()

    @classmethod
    def get_queries(cls, context, keys):
        """The query strings of shapes, in one query: {key: [queries]}.

        Keys not stored are not in it; no query at all for no keys.
        """
        keys = list(keys)
        if not keys:
            return {}
        row = models.Cell0WaitShape
        with db_api.reader(context) as session:
            rows = session.query(row.shape_key, row.queries).filter(
                row.shape_key.in_(keys)).all()
        return {key: json.loads(queries) for key, queries in rows}
