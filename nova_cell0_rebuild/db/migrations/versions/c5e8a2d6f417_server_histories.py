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

"""Server histories: what a move out of cell0 keeps of the cell0 rows.

Revision ID: c5e8a2d6f417
Revises: b7d2e4f1a903
Create Date: 2026-12-03 08:30:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = 'c5e8a2d6f417'
down_revision = 'b7d2e4f1a903'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'cell0_rebuild_server_histories',
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('request_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('history',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=False),
        sa.UniqueConstraint(
            'instance_uuid',
            name='uniq_cell0_rebuild_server_histories0instance_uuid'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
