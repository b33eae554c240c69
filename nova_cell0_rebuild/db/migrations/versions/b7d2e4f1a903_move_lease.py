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

"""Move journal rows are leases: an owner, a fencing token, an expiry.

Revision ID: b7d2e4f1a903
Revises: a41d7e2c9b58
Create Date: 2026-12-03 08:10:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = 'b7d2e4f1a903'
down_revision = 'a41d7e2c9b58'
branch_labels = None
depends_on = None


def upgrade():
    # Rows written before this revision have no lease: a move they record
    # counts as expired once it has not been updated for a lease time,
    # which is how moves were judged interrupted before.
    with op.batch_alter_table('cell0_rebuild_move_journal') as batch:
        batch.add_column(sa.Column('owner', sa.String(255), nullable=True))
        batch.add_column(sa.Column('lease_token', sa.Integer(),
                                   nullable=False, server_default='0'))
        batch.add_column(sa.Column('lease_expires_at', sa.DateTime(),
                                   nullable=True))
