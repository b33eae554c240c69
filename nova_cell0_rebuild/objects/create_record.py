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

"""CreateRecord: how a server create request was made."""

from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils import versionutils

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields

_JSON_COLUMNS = ('requested_networks', 'server_uuids')


def _to_db(values):
    db_values = dict(values)
    for key in _JSON_COLUMNS:
        if db_values.get(key) is not None:
            db_values[key] = jsonutils.dumps(db_values[key])
    return db_values


@base.Cell0RebuildObjectRegistry.register
class CreateRecord(base.Cell0RebuildObject):
    """What a ``POST /servers`` request asked for that Nova keeps nowhere.

    Written before Nova handles the request, so that whether personality
    files were supplied is known for every server Nova creates.
    """

    # Version 1.0: Initial version
    # Version 1.1: Added requested_host and requested_hypervisor_hostname
    # Version 1.2: Added server_uuids
    # Version 1.3: Added wait_deadline and wait_refusal
    VERSION = '1.3'

    fields = dict(base.TIMESTAMP_FIELDS, **{
        'id': fields.IntegerField(read_only=True),
        'request_id': fields.StringField(),
        'status': fields.CreateRecordStatusField(),
        'instance_uuid': fields.UUIDField(nullable=True),
        'reservation_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(),
        'microversion': fields.StringField(),
        'personality_files': fields.NonNegativeIntegerField(),
        # The "networks" value exactly as the request gave it, or None when
        # the request named no networks.
        'requested_networks': fields.JSONField(nullable=True),
        # The 2.74 "host" and "hypervisor_hostname" of the request, which
        # Nova does not keep in the RequestSpec it stores.
        'requested_host': fields.StringField(nullable=True),
        'requested_hypervisor_hostname': fields.StringField(nullable=True),
        # A multi-create's servers that were still in a BuildRequest or in
        # cell0 when Nova accepted the create (its others had landed), so
        # that whether the record is still needed is one look-up by uuid.
        # None for a one-server create, and for records accepted by
        # plugins older than 1.2.
        'server_uuids': fields.ListOfStringsField(nullable=True),
        # The ``cell0_rebuild:wait`` metadata value of the create, as given
        # (None: the create had none), and why it is not honoured (None:
        # it is, or there was none). Only read by the pending service.
        'wait_deadline': fields.StringField(nullable=True),
        'wait_refusal': fields.StringField(nullable=True),
    })

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target_version = versionutils.convert_version_to_tuple(
            target_version)
        if target_version < (1, 3):
            primitive.pop('wait_deadline', None)
            primitive.pop('wait_refusal', None)
        if target_version < (1, 2):
            primitive.pop('server_uuids', None)
        if target_version < (1, 1):
            primitive.pop('requested_host', None)
            primitive.pop('requested_hypervisor_hostname', None)

    @property
    def created_with_personality_files(self):
        return self.personality_files > 0

    @staticmethod
    def _from_db_object(context, record, db_record):
        for key in record.fields:
            value = db_record[key]
            if key in _JSON_COLUMNS and value is not None:
                value = jsonutils.loads(value)
            setattr(record, key, value)
        record._context = context
        record.obj_reset_changes()
        return record

    @staticmethod
    @db_api.retry_on_deadlock
    def _create_in_db(context, values):
        try:
            with db_api.writer(context) as session:
                db_record = models.CreateRecord()
                db_record.update(_to_db(values))
                session.add(db_record)
                session.flush()
                return db_record
        except db_exc.DBDuplicateEntry:
            raise exception.CreateRecordExists(
                request_id=values['request_id'])

    def create(self):
        """Insert the record; raises CreateRecordExists on a duplicate."""
        values = self.obj_get_changes()
        db_record = self._create_in_db(self._context, values)
        self._from_db_object(self._context, self, db_record)

    @staticmethod
    @db_api.retry_on_deadlock
    def _update_in_db(context, record_id, values):
        # One UPDATE, no read: this runs on every server create.
        with db_api.writer(context) as session:
            updated = session.query(models.CreateRecord).filter_by(
                id=record_id).update(_to_db(values),
                                     synchronize_session=False)
        if updated != 1:
            raise exception.CreateRecordNotFound(key=record_id)

    def accept(self, instance_uuid=None, reservation_id=None,
               server_uuids=None):
        """Mark the create as accepted by Nova, naming what it created."""
        self.status = fields.CreateRecordStatus.ACCEPTED
        if instance_uuid is not None:
            self.instance_uuid = instance_uuid
        if reservation_id is not None:
            self.reservation_id = reservation_id
        if server_uuids is not None:
            self.server_uuids = sorted(server_uuids)
        values = self.obj_get_changes()
        values['updated_at'] = timeutils.utcnow()
        self._update_in_db(self._context, self.id, values)
        self.updated_at = values['updated_at']
        self.obj_reset_changes()

    @staticmethod
    def _destroy_in_db(context, record_id):
        with db_api.writer(context) as session:
            return session.query(models.CreateRecord).filter_by(
                id=record_id).delete(synchronize_session=False)

    def destroy(self):
        """Delete the record; deleting one already gone is not an error."""
        self._destroy_in_db(self._context, self.id)

    @staticmethod
    def _get_from_db(context, **filters):
        with db_api.reader(context) as session:
            return session.query(models.CreateRecord).filter_by(
                **filters).order_by(models.CreateRecord.id).first()

    @classmethod
    def get_by_request_id(cls, context, request_id):
        db_record = cls._get_from_db(context, request_id=request_id)
        if db_record is None:
            raise exception.CreateRecordNotFound(key=request_id)
        return cls._from_db_object(context, cls(), db_record)

    @classmethod
    def get_for_instance(cls, context, instance_uuid, reservation_id=None,
                         request_id=None):
        """Find the record of the request that created an instance.

        Tried in order: the instance's own uuid, the reservation it was
        created in (siblings of a multi-create share one record), and the
        request id of its ``create`` instance action.

        :raises: CreateRecordNotFound
        """
        lookups = [('instance_uuid', instance_uuid),
                   ('reservation_id', reservation_id),
                   ('request_id', request_id)]
        for column, value in lookups:
            if value is None:
                continue
            db_record = cls._get_from_db(context, **{column: value})
            if db_record is not None:
                return cls._from_db_object(context, cls(), db_record)
        raise exception.CreateRecordNotFound(key=instance_uuid)

    @classmethod
    def get_for_instances(cls, context, instances):
        """Records of many instances at once: {instance uuid: record}.

        :param instances: objects with ``uuid`` and ``reservation_id``.
        """
        uuids = [instance.uuid for instance in instances]
        reservations = [instance.reservation_id for instance in instances
                        if instance.reservation_id]
        if not uuids:
            return {}
        with db_api.reader(context) as session:
            rows = session.query(models.CreateRecord).filter(
                models.CreateRecord.instance_uuid.in_(uuids) |
                models.CreateRecord.reservation_id.in_(reservations)).all()
        by_uuid = {row.instance_uuid: row for row in rows
                   if row.instance_uuid}
        by_reservation = {row.reservation_id: row for row in rows
                          if row.reservation_id}
        found = {}
        for instance in instances:
            row = by_uuid.get(instance.uuid) or by_reservation.get(
                instance.reservation_id)
            if row is not None:
                found[instance.uuid] = cls._from_db_object(context, cls(),
                                                           row)
        return found

    @classmethod
    def list_page(cls, context, marker=None, limit=100):
        """Records in id order, a page at a time (for purge)."""
        with db_api.reader(context) as session:
            query = session.query(models.CreateRecord).order_by(
                models.CreateRecord.id)
            if marker is not None:
                query = query.filter(models.CreateRecord.id > marker)
            return [cls._from_db_object(context, cls(), row)
                    for row in query.limit(limit).all()]
