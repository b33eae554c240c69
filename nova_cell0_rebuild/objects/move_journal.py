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

"""MoveJournal: how far a server's move out of cell0 got."""

import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

Status = fields.MoveStatus
Step = fields.MoveStep

#: Default of ``MoveJournal.start(current=...)``: the journal is read there.
UNREAD = object()


@base.Cell0RebuildObjectRegistry.register
class MoveJournal(base.Cell0RebuildObject):
    """One server's latest move out of cell0, step by step.

    Every change is a compare-and-swap on the row, so two processes never
    both believe they own a move.
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

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
    })

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

    @classmethod
    def list_in_progress(cls, context, older_than=0, instance_uuid=None,
                         limit=None):
        """Moves in progress not updated for *older_than* seconds."""
        cutoff = timeutils.utcnow() - datetime.timedelta(seconds=older_than)
        with db_api.reader(context) as session:
            query = session.query(models.MoveJournal).filter(
                models.MoveJournal.status == Status.IN_PROGRESS,
                models.MoveJournal.updated_at <= cutoff)
            if instance_uuid is not None:
                query = query.filter_by(instance_uuid=instance_uuid)
            query = query.order_by(models.MoveJournal.updated_at)
            if limit:
                query = query.limit(limit)
            return [cls._from_db_object(context, cls(), row)
                    for row in query.all()]

    def is_stale(self, stale_after):
        """Whether this move is in progress but untouched for so long that
        it was interrupted (what :meth:`list_in_progress` selects).
        """
        if self.status != Status.IN_PROGRESS:
            return False
        age = timeutils.utcnow() - self.updated_at.replace(tzinfo=None)
        return age.total_seconds() >= stale_after

    @classmethod
    def start(cls, context, instance_uuid, request_id=None,
              fault_message=None, stale_after=60, current=UNREAD):
        """Start a move of a server: the journal row is claimed.

        :param fault_message: the fault the server was buried with.
        :param stale_after: seconds after which a move still in progress is
            taken as interrupted rather than running.
        :param current: the server's journal (or None) if the caller has
            just read it; read here otherwise. A stale value is harmless:
            the write is a compare-and-swap on it.
        :returns: the journal, in progress at step ``claimed``.
        :raises: MoveInProgress if another move of the server runs;
            MoveInterrupted (carrying the journal) if one was left in
            progress and must be healed first.
        """
        now = timeutils.utcnow()
        fresh = {'status': Status.IN_PROGRESS, 'step': Step.CLAIMED,
                 'request_id': request_id, 'last_error': None,
                 'fault_message': fault_message,
                 'started_at': now, 'finished_at': None, 'updated_at': now}
        if current is UNREAD:
            current = cls.get_by_instance_uuid(context, instance_uuid)
        if current is None:
            try:
                with db_api.writer(context) as session:
                    row = models.MoveJournal(instance_uuid=instance_uuid,
                                             attempts=1, created_at=now,
                                             **fresh)
                    session.add(row)
                    session.flush()
            except db_exc.DBDuplicateEntry:
                raise exception.MoveInProgress(uuid=instance_uuid)
            return cls._from_db_object(context, cls(), row)
        if current.is_stale(stale_after):
            raise exception.MoveInterrupted(current)
        if current.status == Status.IN_PROGRESS:
            raise exception.MoveInProgress(uuid=instance_uuid)
        fresh['attempts'] = current.attempts + 1
        with db_api.writer(context) as session:
            updated = session.query(models.MoveJournal).filter_by(
                id=current.id, status=current.status,
                attempts=current.attempts).update(
                    fresh, synchronize_session=False)
        if updated != 1:
            raise exception.MoveInProgress(uuid=instance_uuid)
        for key, value in fresh.items():
            setattr(current, key, value)
        current._context = context
        current.obj_reset_changes()
        return current

    def _swap(self, expected, values):
        values['updated_at'] = timeutils.utcnow()
        with db_api.writer(self._context) as session:
            updated = session.query(models.MoveJournal).filter_by(
                id=self.id, **expected).update(values,
                                               synchronize_session=False)
        if updated != 1:
            raise exception.JournalConflict(uuid=self.instance_uuid)
        for key, value in values.items():
            setattr(self, key, value)
        self.obj_reset_changes()

    def advance(self, step):
        """Record that the move reached *step* (from the step it was at)."""
        self._swap({'status': Status.IN_PROGRESS, 'step': self.step},
                   {'step': step})

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
