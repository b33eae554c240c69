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

"""The pending dispatcher's reads of ``cell0_rebuild_waits``, per pass.

A pass reads a constant number of statements whatever the number of
waiting servers (spec "Back-off and persistence"): the eligible rows
counted per shape, the oldest rows of each project and fitting shape (a
window query), the oldest row of each shape that does not fit. Rows come
back as :class:`QueuedWait` plain values, not objects: a pass only reads
them, and dispatches through :class:`.Cell0Wait`'s compare-and-swap.
"""

import collections

import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import fields

State = fields.WaitState

#: What a pass needs of a row.
QueuedWait = collections.namedtuple('QueuedWait', [
    'instance_uuid', 'project_id', 'queued_at', 'shape_key', 'deadline',
    'next_attempt_at', 'attempts', 'state'])

_COLUMNS = [getattr(models.Cell0Wait, name) for name in QueuedWait._fields]


def _eligible(query, now, project_ids):
    """Rows a pass at *now* may serve: waiting, shaped, due, not past
    their deadline, of an enabled project (None: every project).
    """
    row = models.Cell0Wait
    query = query.filter(
        row.state == State.WAITING, row.shape_key.isnot(None),
        row.deadline > now,
        sa.or_(row.next_attempt_at.is_(None), row.next_attempt_at <= now))
    if project_ids is not None:
        query = query.filter(row.project_id.in_(list(project_ids)))
    return query


def eligible_shapes(context, now, project_ids=None):
    """{shape key: eligible rows}, one GROUP BY statement."""
    row = models.Cell0Wait
    with db_api.reader(context) as session:
        rows = _eligible(session.query(row.shape_key, sa.func.count()),
                         now, project_ids).group_by(row.shape_key).all()
    return {key: count for key, count in rows}


def _ranked(context, now, shape_keys, per_lane, partition, project_ids):
    """Eligible rows of *shape_keys* ranked by age within each partition,
    the first *per_lane* of each: one statement.
    """
    shape_keys = list(shape_keys)
    if not shape_keys:
        return []
    row = models.Cell0Wait
    rank = sa.func.row_number().over(
        partition_by=partition,
        order_by=(row.queued_at, row.instance_uuid)).label('rank')
    with db_api.reader(context) as session:
        ranked = _eligible(session.query(*(_COLUMNS + [rank])), now,
                           project_ids).filter(
            row.shape_key.in_(shape_keys)).subquery()
        rows = session.query(*[ranked.c[name] for name in
                               QueuedWait._fields]).filter(
            ranked.c.rank <= per_lane).order_by(
            ranked.c.queued_at, ranked.c.instance_uuid).all()
    return [QueuedWait(*r) for r in rows]


def heads(context, now, shape_keys, per_lane, project_ids=None):
    """The *per_lane* oldest eligible rows of each (project, shape).

    One statement: ``ROW_NUMBER() OVER (PARTITION BY project_id, shape_key
    ORDER BY queued_at, instance_uuid)``; a pass never dispatches more
    than ``max_in_flight`` of one project and shape, so the rows beyond
    are not read into Python.

    :returns: [QueuedWait], oldest first.
    """
    row = models.Cell0Wait
    return _ranked(context, now, shape_keys, per_lane,
                   (row.project_id, row.shape_key), project_ids)


def oldest_of_shapes(context, now, shape_keys, project_ids=None):
    """The oldest eligible row of each of *shape_keys*, one statement:
    with the heads of the fitting shapes, the order finds the oldest
    server that starves (``reserve_after_seconds``) among them.

    :returns: [QueuedWait], oldest first.
    """
    return _ranked(context, now, shape_keys, 1,
                   (models.Cell0Wait.shape_key,), project_ids)


def past_deadline(context, now, limit):
    """Uuids of waiting rows whose deadline passed, at most *limit*."""
    row = models.Cell0Wait
    with db_api.reader(context) as session:
        rows = session.query(row.instance_uuid).filter(
            row.state == State.WAITING, row.deadline <= now).order_by(
            row.deadline).limit(limit).all()
    return [r[0] for r in rows]


def unshaped(context, stale_before, limit):
    """Uuids of waiting rows with no shape, or one computed before
    *stale_before*, at most *limit*, oldest first.
    """
    row = models.Cell0Wait
    with db_api.reader(context) as session:
        rows = session.query(row.instance_uuid).filter(
            row.state == State.WAITING, sa.or_(
                row.shape_key.is_(None),
                row.shape_computed_at < stale_before)).order_by(
            row.queued_at).limit(limit).all()
    return [r[0] for r in rows]


def page(context, after=None, limit=100):
    """Uuids of wait rows of any state, in uuid order, after *after*: the
    sweep's pages over the table (one statement each).
    """
    row = models.Cell0Wait
    with db_api.reader(context) as session:
        query = session.query(row.instance_uuid)
        if after is not None:
            query = query.filter(row.instance_uuid > after)
        rows = query.order_by(row.instance_uuid).limit(limit).all()
    return [r[0] for r in rows]


def waiting_among(context, instance_uuids):
    """The uuids among *instance_uuids* that have a wait row, any state."""
    instance_uuids = list(instance_uuids)
    if not instance_uuids:
        return set()
    row = models.Cell0Wait
    with db_api.reader(context) as session:
        rows = session.query(row.instance_uuid).filter(
            row.instance_uuid.in_(instance_uuids)).all()
    return {r[0] for r in rows}


@db_api.retry_on_deadlock
def note_shape(context, shape_key, reason_code, last_reason):
    """Say why the waiting rows of a shape are not rebuilt: one UPDATE
    per shape, rows already saying it are not written.

    Only rows waiting for capacity (no back-off pending, whose reason
    says why they back off); not fenced by ``lease_token``: only their
    reason is written, which a dispatch overwrites anyway.
    """
    row = models.Cell0Wait
    with db_api.writer(context) as session:
        return session.query(row).filter(
            row.state == State.WAITING, row.shape_key == shape_key,
            row.next_attempt_at.is_(None),
            sa.or_(row.reason_code.is_(None),
                   row.reason_code != reason_code,
                   row.last_reason.is_(None),
                   row.last_reason != last_reason)).update(
            {'reason_code': reason_code, 'last_reason': last_reason},
            synchronize_session=False)
