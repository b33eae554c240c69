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

"""Migrations and models agree, on every backend."""

from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.tests.functional.db import base

# A revision of Nova's own API-database history, as nova-manage writes it.
NOVA_REVISION = 'b30f573d3377'


class _MigrationsTest(test_migrations.ModelsMigrationsSync):

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.BASE.metadata

    def db_sync(self, engine):
        migration.db_sync(engine)

    def include_object(self, object_, name, type_, reflected, compare_to):
        if type_ == 'table':
            return (name.startswith(models.TABLE_PREFIX) and
                    name != migration.VERSION_TABLE)
        return True

    def test_walk_to_head_and_report_version(self):
        self.assertIsNone(migration.db_version(self.engine))
        migration.db_sync(self.engine)
        self.assertEqual(migration.head_version(),
                         migration.db_version(self.engine))
        # Running it again is a no-op.
        migration.db_sync(self.engine)
        self.assertEqual(migration.head_version(),
                         migration.db_version(self.engine))

    def test_nova_alembic_version_table_is_left_alone(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text(
                'CREATE TABLE alembic_version '
                '(version_num VARCHAR(32) NOT NULL PRIMARY KEY)'))
            conn.execute(sa.text(
                "INSERT INTO alembic_version VALUES ('%s')" % NOVA_REVISION))
        migration.db_sync(self.engine)
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT version_num FROM alembic_version')).fetchall()
        self.assertEqual([(NOVA_REVISION,)], [tuple(r) for r in rows])
        tables = set(sa.inspect(self.engine).get_table_names())
        self.assertIn(migration.VERSION_TABLE, tables)
        self.assertEqual(
            {'alembic_version', migration.VERSION_TABLE} |
            set(models.BASE.metadata.tables), tables)


globals().update(base.backends(_MigrationsTest))
