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

"""Create records: how each server create request was made.

Revision ID: 6f2a0c1d9b3e
Revises:
Create Date: 2026-12-02 15:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '6f2a0c1d9b3e'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'cell0_rebuild_create_records',
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('request_id', sa.String(255), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('reservation_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('microversion', sa.String(16), nullable=False),
        sa.Column('personality_files', sa.Integer(), nullable=False),
        sa.Column('requested_networks',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.UniqueConstraint(
            'request_id',
            name='uniq_cell0_rebuild_create_records0request_id'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_index(
        'cell0_rebuild_create_records_instance_uuid_idx',
        'cell0_rebuild_create_records', ['instance_uuid'])
    op.create_index(
        'cell0_rebuild_create_records_reservation_id_idx',
        'cell0_rebuild_create_records', ['reservation_id'])
