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

"""ServerHistory: a server's cell0 history, kept across its move."""

from oslo_serialization import jsonutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields


@base.Cell0RebuildObjectRegistry.register
class ServerHistory(base.Cell0RebuildObject):
    """What a move out of cell0 would otherwise delete with the cell0 rows.

    The instance actions with their events, the faults and the ec2 id of
    the server in cell0, stashed before the hard delete and written back
    into the cell the server is mapped to later.
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        # The rebuild request of the move that stashed it.
        'request_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(),
        # {'actions': [...], 'faults': [...], 'ec2_id': ...}.
        'history': fields.JSONField(),
    })

    @staticmethod
    def _from_db_object(context, stash, db_stash):
        for key in stash.fields:
            value = db_stash[key]
            if key == 'history':
                value = jsonutils.loads(value)
            setattr(stash, key, value)
        stash._context = context
        stash.obj_reset_changes()
        return stash

    @staticmethod
    def _create_in_db(context, values):
        # Joins an open transaction on the same facade: the move's.
        with db_api.writer(context) as session:
            db_stash = models.ServerHistory()
            db_stash.update(dict(values,
                                 history=jsonutils.dumps(values['history'])))
            session.add(db_stash)
            session.flush()
            return db_stash

    @classmethod
    def stash(cls, context, instance_uuid, project_id, history,
              request_id=None):
        """Write a server's history (it has none stashed: one INSERT).

        :raises: DBDuplicateEntry if the server has a stash already.
        """
        db_stash = cls._create_in_db(context, {
            'instance_uuid': instance_uuid, 'project_id': project_id,
            'history': history, 'request_id': request_id})
        return cls._from_db_object(context, cls(), db_stash)

    @staticmethod
    def table_in_api_database():
        """The stash table when it lives in the Nova API database, or None.

        For a look-up of Nova's that joins it, in one statement.
        """
        if db_api.uses_nova_api_database():
            return models.ServerHistory.__table__
        return None

    @staticmethod
    def _get_from_db(context, instance_uuid):
        with db_api.reader(context) as session:
            return session.query(models.ServerHistory).filter_by(
                instance_uuid=instance_uuid).first()

    @classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The server's stashed history, or None (one indexed SELECT)."""
        db_stash = cls._get_from_db(context, instance_uuid)
        if db_stash is None:
            return None
        return cls._from_db_object(context, cls(), db_stash)

    @staticmethod
    def _destroy_in_db(context, stash_id):
        with db_api.writer(context) as session:
            return session.query(models.ServerHistory).filter_by(
                id=stash_id).delete(synchronize_session=False)

    def destroy(self):
        """Delete this stash; one replaced or gone meanwhile stays so."""
        self._destroy_in_db(self._context, self.id)

    @classmethod
    def list_page(cls, context, marker=None, limit=100):
        """Stashes in id order, a page at a time (for purge)."""
        with db_api.reader(context) as session:
            query = session.query(models.ServerHistory).order_by(
                models.ServerHistory.id)
            if marker is not None:
                query = query.filter(models.ServerHistory.id > marker)
            return [cls._from_db_object(context, cls(), row)
                    for row in query.limit(limit).all()]
