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

"""The move journal counts its holder's fenced writes (``beats``).

A heartbeat in the same second as the write before it changed nothing
(whole-second DATETIME columns). On a Galera cluster an UPDATE that
changes nothing has no write-set to certify, so on a node that had not yet
applied another actor's take-over or a DELETE's forget, a heartbeat passed
its fence. Every fenced write now increments ``beats``, as the pending
epoch's heartbeat does.

Revision ID: 7c2e5a9d1b38
Revises: 0d4b8e6a2c71
Create Date: 2026-12-07 07:15:00
"""

from alembic import op
import sqlalchemy as sa

revision = '7c2e5a9d1b38'
down_revision = '0d4b8e6a2c71'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('cell0_rebuild_move_journal') as batch:
        batch.add_column(sa.Column('beats', sa.Integer(), nullable=False,
                                   server_default='0'))
