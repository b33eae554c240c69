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

"""SQL criteria: a server's cell0 rows still hold what a move copied.

The move hard-deletes the cell0 rows of a server once it copied them into
a BuildRequest and stashed its history. Nova's API may accept a write to
the server meanwhile (doc/source/admin/concurrent-edits.rst lists them):
to a column of its instance row (a rename, a lock, a reset of its state),
to its system_metadata (a lock's reason, a cleared password) or to its
history (the instance action each of those records). The delete is
conditional on these criteria, so such a write is never deleted with the
rows: the move is undone and tried again from a fresh read instead.

The criteria are folded into the DELETE statements the move issues anyway;
they cost no statement. Comparisons are exact: MySQL compares strings
case-insensitively and ignores trailing spaces under Nova's collation, so
a rename from 'web' to 'Web ' would look unchanged there without BINARY.
"""

import netaddr
from nova.db.main import models as main_models
from oslo_versionedobjects import fields as ovo_fields
import sqlalchemy as sa


def compared_columns(copied_fields):
    """The instances columns compared: those a move copies, and vm_state.

    :param copied_fields: the Instance fields a move copies
        (``INSTANCE_COPIED``).
    """
    columns = frozenset(
        column.name for column in main_models.Instance.__table__.columns)
    return tuple(sorted((frozenset(copied_fields) & columns) | {'vm_state'}))


def _equals(session, column, value):
    if isinstance(value, netaddr.IPAddress):
        # The object holds netaddr's address; Nova's column type takes
        # (and shortens) its text, as Instance.save() writes it.
        value = str(value)
    if value is None:
        return column.is_(None)
    if session.bind.dialect.name == 'mysql' and isinstance(value, str):
        return sa.func.binary(column) == value
    return column == value


def instance_row_unchanged(session, instance, columns):
    """Criteria on the instances row: *columns* hold what *instance* holds.

    :param instance: the Instance the move read and copied.
    """
    criteria = []
    for name in columns:
        if not instance.obj_attr_is_set(name):
            continue
        column = getattr(main_models.Instance, name)
        value = getattr(instance, name)
        criterion = _equals(session, column, value)
        null_reads_as = _null_reads_as(instance, name)
        if null_reads_as is not None and null_reads_as == value:
            # Nova reads NULL in this column as the field's default (the
            # locked, auto_disk_config, shutdown_terminate and
            # disable_terminate of a row Nova's API did not write whole):
            # the instance the move copied cannot tell them apart.
            criterion = sa.or_(column.is_(None), criterion)
        criteria.append(criterion)
    return criteria


def _null_reads_as(instance, name):
    """What Nova's object holds for a NULL in the column (None: None)."""
    field = instance.fields[name]
    if field.nullable or field.default is ovo_fields.UnspecifiedDefault:
        return None
    return field.default


def rest_unchanged(session, instance_uuid, system_metadata=None,
                   history=None):
    """Criteria, for a statement on another table, on the server's
    system_metadata and history rows.

    Meant for a DELETE issued before those rows are deleted in the same
    transaction (its subqueries read the other tables; MySQL refuses a
    subquery on the table a DELETE deletes from).

    :param system_metadata: the dict the move copied, or None not to
        compare it.
    :param history: the history the move stashed
        (nova_instance_history.read), or None not to compare it: the same
        number of actions and of their events (Nova's API only ever adds
        them).
    """
    criteria = []
    if system_metadata is not None:
        criteria.extend(_system_metadata_unchanged(
            session, instance_uuid, system_metadata))
    if history is not None:
        criteria.extend(_history_unchanged(instance_uuid, history))
    return criteria


def _system_metadata_unchanged(session, instance_uuid, copied):
    model = main_models.InstanceSystemMetadata
    live = sa.and_(model.instance_uuid == instance_uuid, model.deleted == 0)
    count = sa.select(sa.func.count()).select_from(model).where(
        live).scalar_subquery()
    criteria = [count == len(copied)]
    if copied:
        # Same number of rows, and none that is not a copied (key, value).
        copied_pairs = sa.or_(*[
            sa.and_(_equals(session, model.key, key),
                    _equals(session, model.value, value))
            for key, value in copied.items()])
        criteria.append(~sa.exists().where(live, ~copied_pairs))
    return criteria


def _history_unchanged(instance_uuid, history):
    actions = history.get('actions', ())
    action = main_models.InstanceAction
    event = main_models.InstanceActionEvent
    of_server = sa.select(action.id).where(
        action.instance_uuid == instance_uuid).scalar_subquery()
    action_count = sa.select(sa.func.count()).select_from(action).where(
        action.instance_uuid == instance_uuid).scalar_subquery()
    event_count = sa.select(sa.func.count()).select_from(event).where(
        event.action_id.in_(of_server)).scalar_subquery()
    return [action_count == len(actions),
            event_count == sum(len(a.get('events', ())) for a in actions)]
