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

"""Pending waits: buried servers that wait for room, their request shapes,
the dispatcher's fencing epoch, and the opt-in of a create record.

Revision ID: 0d4b8e6a2c71
Revises: f1a7c3e9d205
Create Date: 2026-12-07 03:15:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '0d4b8e6a2c71'
down_revision = 'f1a7c3e9d205'
branch_labels = None
depends_on = None

MediumText = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


def _timestamps():
    return [sa.Column('created_at', sa.DateTime(), nullable=True),
            sa.Column('updated_at', sa.DateTime(), nullable=True)]


def _create_waits():
    op.create_table(
        'cell0_rebuild_waits',
        *_timestamps(),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('source', sa.String(16), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('queued_at', sa.DateTime(), nullable=False),
        sa.Column('deadline', sa.DateTime(), nullable=False),
        sa.Column('shape_key', sa.String(64), nullable=True),
        sa.Column('shape_computed_at', sa.DateTime(), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=True),
        sa.Column('reason_code', sa.String(32), nullable=True),
        sa.Column('last_reason', sa.Text(), nullable=True),
        sa.Column('last_attempt_at', sa.DateTime(), nullable=True),
        sa.Column('last_request_id', sa.String(255), nullable=True),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('lease_token', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
        sa.Column('ended_at', sa.DateTime(), nullable=True),
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_waits0instance_uuid'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    # What a pass reads: eligible rows per project in queue order, per
    # shape, and the next back-off due.
    op.create_index('cell0_rebuild_waits_state_project_queued_idx',
                    'cell0_rebuild_waits',
                    ['state', 'project_id', 'queued_at'])
    op.create_index('cell0_rebuild_waits_state_shape_idx',
                    'cell0_rebuild_waits', ['state', 'shape_key'])
    op.create_index('cell0_rebuild_waits_state_next_attempt_idx',
                    'cell0_rebuild_waits', ['state', 'next_attempt_at'])


def upgrade():
    _create_waits()
    op.create_table(
        'cell0_rebuild_wait_shapes',
        *_timestamps(),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('shape_key', sa.String(64), nullable=False),
        sa.Column('queries', MediumText, nullable=False),
        sa.UniqueConstraint(
            'shape_key', name='uniq_cell0_rebuild_wait_shapes0shape_key'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_table(
        'cell0_rebuild_pending_epoch',
        *_timestamps(),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('epoch', sa.Integer(), nullable=False),
        sa.Column('holder', sa.String(255), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(), nullable=False),
        sa.Column('beats', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.UniqueConstraint(
            'name', name='uniq_cell0_rebuild_pending_epoch0name'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    # Nullable: records written before this revision have no opt-in.
    with op.batch_alter_table('cell0_rebuild_create_records') as batch:
        batch.add_column(sa.Column('wait_deadline', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('wait_refusal', sa.Text(),
                                   nullable=True))
