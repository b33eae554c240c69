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

"""Move journal: how far each server's move out of cell0 got.

Revision ID: 8c3e5b7a1f20
Revises: 6f2a0c1d9b3e
Create Date: 2026-12-02 15:10:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = '8c3e5b7a1f20'
down_revision = '6f2a0c1d9b3e'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'cell0_rebuild_move_journal',
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('request_id', sa.String(255), nullable=True),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('step', sa.String(32), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('fault_message', sa.Text(), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_move_journal0instance_uuid'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_index(
        'cell0_rebuild_move_journal_status_updated_at_idx',
        'cell0_rebuild_move_journal', ['status', 'updated_at'])
