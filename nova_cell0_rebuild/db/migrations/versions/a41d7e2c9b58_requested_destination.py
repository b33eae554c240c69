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

"""Create records keep the requested host and hypervisor hostname.

Revision ID: a41d7e2c9b58
Revises: 8c3e5b7a1f20
Create Date: 2026-12-02 15:20:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = 'a41d7e2c9b58'
down_revision = '8c3e5b7a1f20'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('cell0_rebuild_create_records') as batch:
        batch.add_column(sa.Column('requested_host', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('requested_hypervisor_hostname',
                                   sa.String(255), nullable=True))
