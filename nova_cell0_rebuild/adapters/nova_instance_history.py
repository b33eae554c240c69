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

"""Adapter for a server's history in a cell: actions, events, faults, ec2 id.

A move out of cell0 hard-deletes the server's cell0 rows, its history with
them, and Nova's conductor writes the server afresh in the cell it lands in.
The history is read here as plain JSON-able data before the delete
(:func:`read`) and written back into whatever cell the server lives in
later (:func:`restore`), idempotently: an action already there (same
instance and request id) is not written twice, nor a fault already there.
In a real cell, under a guest that may be running, rows are only added:
Nova's own rows are never deleted there and the ec2 id never changed.
"""

from nova.compute import instance_actions
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova.objects import cell_mapping
from oslo_log import log as logging
from oslo_utils import timeutils

LOG = logging.getLogger(__name__)

CELL0_UUID = cell_mapping.CellMapping.CELL0_UUID

#: Version of the data :func:`read` returns, stored with it.
FORMAT = 1

_ACTION_COLUMNS = ('action', 'request_id', 'user_id', 'project_id',
                   'start_time', 'finish_time', 'message', 'created_at',
                   'updated_at')
_EVENT_COLUMNS = ('event', 'start_time', 'finish_time', 'result',
                  'traceback', 'host', 'details', 'created_at', 'updated_at')
_FAULT_COLUMNS = ('code', 'message', 'details', 'host', 'created_at',
                  'updated_at')
_DATETIMES = frozenset(['start_time', 'finish_time', 'created_at',
                        'updated_at'])


def _to_dict(row, columns):
    values = {}
    for column in columns:
        value = getattr(row, column)
        if column in _DATETIMES and value is not None:
            value = value.isoformat()
        values[column] = value
    return values


def _from_dict(values, columns):
    row = {}
    for column in columns:
        value = values.get(column)
        if column in _DATETIMES and value is not None:
            value = timeutils.normalize_time(timeutils.parse_isotime(value))
        row[column] = value
    return row


def _writer(cctxt):
    return main_db_api.get_context_manager(cctxt).writer.using(cctxt)


def _read_in_session(session, instance_uuid):
    action_model = main_models.InstanceAction
    event_model = main_models.InstanceActionEvent
    actions = session.query(action_model).filter_by(
        instance_uuid=instance_uuid, deleted=0).order_by(
            action_model.created_at, action_model.id).all()
    events = {}
    if actions:
        for event in session.query(event_model).filter(
                event_model.action_id.in_([a.id for a in actions]),
                event_model.deleted == 0).order_by(
                    event_model.created_at, event_model.id):
            events.setdefault(event.action_id, []).append(
                _to_dict(event, _EVENT_COLUMNS))
    faults = session.query(main_models.InstanceFault).filter_by(
        instance_uuid=instance_uuid, deleted=0).order_by(
            main_models.InstanceFault.id).all()
    ec2 = session.query(main_models.InstanceIdMapping.id).filter_by(
        uuid=instance_uuid).order_by(
            main_models.InstanceIdMapping.id.desc()).first()
    return {
        'format': FORMAT,
        'actions': [dict(_to_dict(action, _ACTION_COLUMNS),
                         events=events.get(action.id, []))
                    for action in actions],
        'faults': [_to_dict(fault, _FAULT_COLUMNS) for fault in faults],
        'ec2_id': ec2[0] if ec2 else None,
    }


def read(context, cell_mapping, instance_uuid):
    """The server's history in a cell, as JSON-able data.

    :returns: {'actions': [... each with its 'events'], 'faults': [...],
        'ec2_id': int or None}
    """
    with nova_context.target_cell(context, cell_mapping) as cctxt:
        with main_db_api.get_context_manager(cctxt).reader.using(
                cctxt) as session:
            return _read_in_session(session, instance_uuid)


def _insert_actions(session, instance_uuid, actions):
    """:returns: how many actions were missing and written."""
    model = main_models.InstanceAction
    present = {row.request_id for row in session.query(
        model.request_id).filter_by(instance_uuid=instance_uuid)}
    written = 0
    for action in actions:
        if action['request_id'] in present:
            continue
        row = model(instance_uuid=instance_uuid,
                    **_from_dict(action, _ACTION_COLUMNS))
        session.add(row)
        session.flush()
        for event in action.get('events', ()):
            session.add(main_models.InstanceActionEvent(
                action_id=row.id, **_from_dict(event, _EVENT_COLUMNS)))
        present.add(action['request_id'])
        written += 1
    return written


def _fault_key(fault):
    return (fault['code'], fault['message'], fault['created_at'])


def _insert_faults(session, instance_uuid, faults, in_cell0, live):
    """Add the stashed faults that are missing.

    Nova shows a server's fault with the highest id. In cell0, where the
    plugin buries the server itself, its faults are written again in time
    order. In a real cell Nova's own rows are never deleted nor changed:
    the stashed faults (from burials, older than anything the cell wrote)
    are only added, which keeps the newest shown only while the cell has
    no fault of the server's yet. A live server with faults of its own
    there gets them once it is deleted (nobody reads a deleted server's
    fault as its current one).

    :returns: how many were added, or None when they wait for the delete.
    """
    model = main_models.InstanceFault
    existing = session.query(model).filter_by(
        instance_uuid=instance_uuid, deleted=0).order_by(model.id).all()
    known = {_fault_key(_from_dict(_to_dict(row, _FAULT_COLUMNS),
                                   _FAULT_COLUMNS)) for row in existing}
    missing = [values for values in (_from_dict(f, _FAULT_COLUMNS)
                                     for f in faults)
               if _fault_key(values) not in known]
    if not missing:
        return 0
    rows = missing
    if in_cell0:
        rows = missing + [_from_dict(_to_dict(row, _FAULT_COLUMNS),
                                     _FAULT_COLUMNS) for row in existing]
        for row in existing:
            session.delete(row)
        session.flush()
    elif existing and live:
        return None
    # Stable: faults of the same second keep their order.
    rows.sort(key=lambda values: values['created_at'] or
              timeutils.utcnow())
    for values in rows:
        session.add(model(instance_uuid=instance_uuid, **values))
    session.flush()
    return len(missing)


def _keep_ec2_id(session, instance_uuid, ec2_id, cell_name):
    """Give the server its old ec2 id back in cell0, where that id is free.

    Only ever called for cell0, where no guest runs: a guest reads its
    EC2-style instance-id from the metadata service, and changing it under
    a guest that booted makes it run its first-boot steps again. In a real
    cell the server keeps the ec2 id the cell gave it when it landed.

    Free means no row holds it and the cell's id sequence is past it: an
    id above the sequence would be handed out again to the next server
    the cell creates (PostgreSQL sequences and InnoDB counters do not move
    when a row's id is updated), which would then fail to be created.
    """
    model = main_models.InstanceIdMapping
    current = session.query(model).filter_by(uuid=instance_uuid).order_by(
        model.id.desc()).first()
    if ec2_id is None or current is None or current.id == ec2_id:
        return
    holder = session.query(model.uuid).filter_by(id=ec2_id).first()
    if holder is not None or ec2_id > current.id:
        LOG.warning('The ec2 id %(old)s of server %(uuid)s is not free in '
                    'cell %(cell)s (%(why)s): the server keeps ec2 id '
                    '%(new)s there.',
                    {'old': ec2_id, 'uuid': instance_uuid, 'cell': cell_name,
                     'new': current.id,
                     'why': 'taken by another server' if holder is not None
                     else 'not yet reached by its id sequence'})
        return
    session.query(model).filter_by(id=current.id).update(
        {'id': ec2_id}, synchronize_session=False)


def _rename_rebuild_action(session, instance_uuid, request_id):
    """Name the conductor's 'create' of the rebuild a 'rebuild'.

    :returns: whether the cell has an action of the rebuild's request.
    """
    model = main_models.InstanceAction
    query = session.query(model).filter_by(
        instance_uuid=instance_uuid, request_id=request_id)
    query.filter_by(action=instance_actions.CREATE).update(
        {'action': instance_actions.REBUILD}, synchronize_session=False)
    return query.first() is not None


def restore(session, instance_uuid, history, request_id=None,
            cell=None, deleted=False):
    """Write a stashed history into the cell of *session*, idempotently.

    Only rows are added (and the conductor's 'create' of the rebuild
    renamed): in a real cell nothing of Nova's is deleted, and the ec2 id
    is left as the cell gave it (see :func:`_keep_ec2_id`).

    :param request_id: the move's rebuild request, whose action the
        conductor wrote as 'create': it is renamed 'rebuild'.
    :param cell: the CellMapping of *session*; None means a real cell.
    :param deleted: Nova's delete queued the server (its row may still
        be live, until its compute deletes it).
    :returns: whether the history is complete there: the instance exists,
        its faults were not left for its delete, and, with *request_id*,
        the conductor's action of the rebuild is there too, or nothing of
        the history was missing (a move undone before its cell0 rows
        went). Until then the stash is still
        needed: the conductor maps a server it buries in cell0 before it
        writes its action.
    """
    in_cell0 = cell is not None and cell.uuid == CELL0_UUID
    # Locking the instance row serialises two readers restoring at once,
    # and a hard delete of the row waits for the restore.
    instance = session.query(
        main_models.Instance.id, main_models.Instance.deleted).filter_by(
        uuid=instance_uuid).with_for_update().first()
    if instance is None:
        return False
    written = _insert_actions(session, instance_uuid,
                              history.get('actions', ()))
    faults = _insert_faults(session, instance_uuid,
                            history.get('faults', ()), in_cell0,
                            live=not (instance.deleted or deleted))
    if faults is None:
        return False  # the faults wait for the server's delete
    written += faults
    if in_cell0:
        _keep_ec2_id(session, instance_uuid, history.get('ec2_id'),
                     cell.name)
    if request_id is None:
        return True
    renamed = _rename_rebuild_action(session, instance_uuid, request_id)
    return renamed or not written


def materialise(context, cell_mapping, instance_uuid, history,
                request_id=None, deleted=False):
    """:func:`restore` in a cell, in one transaction of its own."""
    with nova_context.target_cell(context, cell_mapping) as cctxt:
        with _writer(cctxt) as session:
            return restore(session, instance_uuid, history, request_id,
                           cell=cell_mapping, deleted=deleted)


def may_read_actions(context, project_id):
    """Whether Nova's policy lets the caller list a project's actions."""
    return context.can(
        'os_compute_api:os-instance-actions:list',
        target={'project_id': project_id}, fatal=False)
