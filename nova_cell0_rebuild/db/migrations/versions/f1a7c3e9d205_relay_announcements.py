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

"""Relay announcements: each burial announced to Aardvark once, by any relay.

Revision ID: f1a7c3e9d205
Revises: e3f9a1c7b2d4
Create Date: 2026-12-06 20:00:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = 'f1a7c3e9d205'
down_revision = 'e3f9a1c7b2d4'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'cell0_rebuild_relay_announcements',
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('message_id', sa.String(255), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('owner', sa.String(255), nullable=False),
        sa.Column('lease_token', sa.Integer(), nullable=False,
                  server_default='1'),
        sa.Column('lease_expires_at', sa.DateTime(), nullable=False),
        sa.Column('announced_at', sa.DateTime(), nullable=True),
        sa.UniqueConstraint(
            'instance_uuid', 'message_id',
            name='uniq_cell0_rebuild_relay_announcements0burial'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    # What purge reads: the rows last changed before its cut-off.
    op.create_index(
        'cell0_rebuild_relay_announcements_updated_at_idx',
        'cell0_rebuild_relay_announcements', ['updated_at'])
