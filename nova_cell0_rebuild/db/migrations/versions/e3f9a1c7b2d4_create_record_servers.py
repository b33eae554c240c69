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

"""Create records name the servers of a multi-create.

Written once, when Nova accepted the create, so that deciding whether a
record is still needed looks those servers up by uuid instead of listing
every BuildRequest of the deployment for their reservation.

Revision ID: e3f9a1c7b2d4
Revises: c5e8a2d6f417
Create Date: 2026-12-03 13:50:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = 'e3f9a1c7b2d4'
down_revision = 'c5e8a2d6f417'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('cell0_rebuild_create_records') as batch:
        batch.add_column(sa.Column(
            'server_uuids',
            sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
            nullable=True))
