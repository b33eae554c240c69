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

"""SQLAlchemy models of the plugin's tables.

Every table carries the ``cell0_rebuild_`` prefix so that it can live in the
Nova API database beside Nova's own tables without clashing.
"""

from oslo_db.sqlalchemy import models
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

TABLE_PREFIX = 'cell0_rebuild_'

# A create body is at most [oslo_middleware] max_request_body_size (114 KiB
# by default), more than MySQL's TEXT holds.
MediumText = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


class _Base(models.TimestampMixin, models.ModelBase):
    """Timestamps on every row, as in Nova's API database."""


BASE = orm.declarative_base(cls=_Base)


class CreateRecord(BASE):
    """How a server create request was made, written before Nova acts.

    One row per ``POST /servers`` request, keyed by its request id. It is
    pending while Nova handles the request and accepted once Nova answered
    202; it is deleted when Nova refused the request.
    """

    __tablename__ = TABLE_PREFIX + 'create_records'
    __table_args__ = (
        sa.UniqueConstraint(
            'request_id',
            name='uniq_cell0_rebuild_create_records0request_id'),
        sa.Index('cell0_rebuild_create_records_instance_uuid_idx',
                 'instance_uuid'),
        sa.Index('cell0_rebuild_create_records_reservation_id_idx',
                 'reservation_id'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    request_id = sa.Column(sa.String(255), nullable=False)
    status = sa.Column(sa.String(16), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=True)
    reservation_id = sa.Column(sa.String(255), nullable=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False)
    microversion = sa.Column(sa.String(16), nullable=False)
    personality_files = sa.Column(sa.Integer, nullable=False)
    # The "networks" value of the request as JSON, NULL when it had none.
    requested_networks = sa.Column(MediumText, nullable=True)
    # The 2.74 "host" and "hypervisor_hostname": Nova does not keep them.
    requested_host = sa.Column(sa.String(255), nullable=True)
    requested_hypervisor_hostname = sa.Column(sa.String(255), nullable=True)
    # The uuids (JSON list) of a multi-create's servers that were not yet
    # placed in a real cell when Nova accepted it; NULL for one server.
    server_uuids = sa.Column(MediumText, nullable=True)
    # The "cell0_rebuild:wait" metadata value of the create, as given (a
    # deadline), NULL when the create had none; and why it is not honoured
    # (malformed, policy refused, check failed), NULL when it is.
    wait_deadline = sa.Column(sa.String(255), nullable=True)
    wait_refusal = sa.Column(sa.Text, nullable=True)


class MoveJournal(BASE):
    """The journal of a server's move out of cell0, one row per server.

    ``step`` says how far the latest move got; ``status`` whether it is
    still in progress, done (handed to the conductor) or rolled back.
    A move in progress is a lease held by ``owner``: each of its writes
    compares ``lease_token`` and renews ``lease_expires_at``; ``heal``
    takes an expired lease (a new token) before it finishes or undoes a
    move a crash interrupted.
    """

    __tablename__ = TABLE_PREFIX + 'move_journal'
    __table_args__ = (
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_move_journal0instance_uuid'),
        sa.Index('cell0_rebuild_move_journal_status_updated_at_idx',
                 'status', 'updated_at'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    request_id = sa.Column(sa.String(255), nullable=True)
    status = sa.Column(sa.String(16), nullable=False)
    step = sa.Column(sa.String(32), nullable=False)
    attempts = sa.Column(sa.Integer, nullable=False)
    last_error = sa.Column(sa.Text, nullable=True)
    # The fault the server was buried with, restored if it is buried again.
    fault_message = sa.Column(sa.Text, nullable=True)
    started_at = sa.Column(sa.DateTime, nullable=True)
    finished_at = sa.Column(sa.DateTime, nullable=True)
    # The move is a lease: who holds it, the fencing token every write of
    # the holder compares, and until when it holds without a heartbeat.
    owner = sa.Column(sa.String(255), nullable=True)
    lease_token = sa.Column(sa.Integer, nullable=False, default=0,
                            server_default='0')
    lease_expires_at = sa.Column(sa.DateTime, nullable=True)
    # Counts the holder's fenced writes, so that each changes the row:
    # Galera certifies only a change (MoveJournal._swap_in_db).
    beats = sa.Column(sa.Integer, nullable=False, default=0,
                      server_default='0')


class ServerHistory(BASE):
    """A server's history, kept while its move out of cell0 deletes it.

    One row per server: the instance actions with their events, the faults
    and the ec2 id the server had in cell0, as JSON, and the move's rebuild
    request id. Written before the cell0 rows are hard-deleted, written
    back into the cell the server lives in later, then deleted.
    """

    __tablename__ = TABLE_PREFIX + 'server_histories'
    __table_args__ = (
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_server_histories0instance_uuid'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    request_id = sa.Column(sa.String(255), nullable=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    history = sa.Column(MediumText, nullable=False)


class RelayAnnouncement(BASE):
    """A burial the Aardvark relay announces, or announced, once.

    One row per burial: the server and the message id of Nova's
    notification, which a redelivery keeps and a new burial does not.
    Written by compare-and-swap before the relay announces, so that of
    the relays of a pool, and a relay restarted, one announces: ``state``
    is ``announcing`` while ``owner`` holds the lease until
    ``lease_expires_at``, then ``announced``. A lease that expired (its
    relay died mid-announcement) is taken over by the next delivery.
    """

    __tablename__ = TABLE_PREFIX + 'relay_announcements'
    __table_args__ = (
        sa.UniqueConstraint(
            'instance_uuid', 'message_id',
            name='uniq_cell0_rebuild_relay_announcements0burial'),
        sa.Index('cell0_rebuild_relay_announcements_updated_at_idx',
                 'updated_at'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    message_id = sa.Column(sa.String(255), nullable=False)
    state = sa.Column(sa.String(16), nullable=False)
    owner = sa.Column(sa.String(255), nullable=False)
    lease_token = sa.Column(sa.Integer, nullable=False, default=1,
                            server_default='1')
    lease_expires_at = sa.Column(sa.DateTime, nullable=False)
    announced_at = sa.Column(sa.DateTime, nullable=True)


class Cell0Wait(BASE):
    """A buried server that waits for room, to be rebuilt automatically.

    One row per server. ``state`` is ``waiting`` (for capacity or for
    ``next_attempt_at``), ``dispatched`` while a rebuild of the pending
    service is unsettled, ``ended`` (deadline, cancelled) until the server
    leaves cell0. Every write of the dispatcher compares ``state`` and
    ``lease_token``: of two dispatchers one acts on a wait.
    """

    __tablename__ = TABLE_PREFIX + 'waits'
    __table_args__ = (
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_waits0instance_uuid'),
        # A pass's reads: eligible rows per project in queue order, per
        # shape, and the next due back-off.
        sa.Index('cell0_rebuild_waits_state_project_queued_idx',
                 'state', 'project_id', 'queued_at'),
        sa.Index('cell0_rebuild_waits_state_shape_idx',
                 'state', 'shape_key'),
        sa.Index('cell0_rebuild_waits_state_next_attempt_idx',
                 'state', 'next_attempt_at'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    # Who opted in.
    user_id = sa.Column(sa.String(255), nullable=False)
    source = sa.Column(sa.String(16), nullable=False)
    state = sa.Column(sa.String(16), nullable=False)
    # The first burial of this wait: its place in the fair order.
    queued_at = sa.Column(sa.DateTime, nullable=False)
    deadline = sa.Column(sa.DateTime, nullable=False)
    # A key of cell0_rebuild_wait_shapes; NULL until computed.
    shape_key = sa.Column(sa.String(64), nullable=True)
    shape_computed_at = sa.Column(sa.DateTime, nullable=True)
    attempts = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    next_attempt_at = sa.Column(sa.DateTime, nullable=True)
    reason_code = sa.Column(sa.String(32), nullable=True)
    last_reason = sa.Column(sa.Text, nullable=True)
    last_attempt_at = sa.Column(sa.DateTime, nullable=True)
    last_request_id = sa.Column(sa.String(255), nullable=True)
    # The dispatcher holding it, and the fencing token of each write.
    owner = sa.Column(sa.String(255), nullable=True)
    lease_token = sa.Column(sa.Integer, nullable=False, default=0,
                            server_default='0')
    lease_expires_at = sa.Column(sa.DateTime, nullable=True)
    ended_at = sa.Column(sa.DateTime, nullable=True)


class Cell0WaitShape(BASE):
    """A request shape: the placement query string(s) of waiting servers.

    Content-addressed: ``shape_key`` is the SHA-256 of the queries, so a
    row never changes; servers of one shape share it.
    """

    __tablename__ = TABLE_PREFIX + 'wait_shapes'
    __table_args__ = (
        sa.UniqueConstraint(
            'shape_key',
            name='uniq_cell0_rebuild_wait_shapes0shape_key'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    shape_key = sa.Column(sa.String(64), nullable=False)
    # The query string(s) as a JSON list.
    queries = sa.Column(MediumText, nullable=False)


class PendingEpoch(BASE):
    """The fencing epoch of the pending service's dispatcher, per name.

    A copy elected dispatcher increments ``epoch``; every dispatch first
    renews ``heartbeat_at`` where the epoch is still its own, so a deposed
    copy (whose lock expired while it was paused) stops acting.
    """

    __tablename__ = TABLE_PREFIX + 'pending_epoch'
    __table_args__ = (
        sa.UniqueConstraint(
            'name', name='uniq_cell0_rebuild_pending_epoch0name'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    name = sa.Column(sa.String(64), nullable=False)
    epoch = sa.Column(sa.Integer, nullable=False)
    holder = sa.Column(sa.String(255), nullable=False)
    heartbeat_at = sa.Column(sa.DateTime, nullable=False)
    # Incremented by every heartbeat, so that each one changes the row:
    # Galera certifies only an UPDATE that changes a row, and a heartbeat
    # in the same second as the last one (DATETIME has no fraction) would
    # otherwise pass on a node that has not applied a newer epoch yet.
    beats = sa.Column(sa.Integer, nullable=False, default=0,
                      server_default='0')
