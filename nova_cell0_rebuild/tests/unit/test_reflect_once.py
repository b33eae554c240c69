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

from nova.db.main import api as main_db_api
from oslotest import base
import sqlalchemy as sa

from nova_cell0_rebuild.tests.interleavings import reflect_once


class ReflectOnceTest(base.BaseTestCase):
    """The explorer's cache of Nova's archive-time reflection."""

    def setUp(self):
        super().setUp()
        self.engine = sa.create_engine('sqlite://')
        with self.engine.begin() as conn:
            conn.execute(sa.text('CREATE TABLE parent (id INTEGER PRIMARY '
                                 'KEY)'))
            conn.execute(sa.text('CREATE TABLE child (id INTEGER PRIMARY '
                                 'KEY, parent_id INTEGER REFERENCES '
                                 'parent(id))'))
        self.statements = []
        sa.event.listen(self.engine, 'before_cursor_execute',
                        lambda *args: self.statements.append(args[2]))

    def _reflect(self):
        meta = main_db_api.sa.MetaData()
        meta.reflect(bind=self.engine)
        return meta

    def test_second_reflection_reads_nothing_and_sees_the_same_tables(self):
        self.useFixture(reflect_once.ReflectOnce())
        first = self._reflect()
        read = len(self.statements)
        second = self._reflect()
        self.assertGreater(read, 0)
        self.assertEqual(read, len(self.statements))
        self.assertEqual(['parent', 'child'],
                         [t.name for t in second.sorted_tables])
        self.assertEqual(first.tables['child'].c.keys(),
                         second.tables['child'].c.keys())

    def test_only_nova_archive_module_is_changed(self):
        self.useFixture(reflect_once.ReflectOnce())
        self.assertIsNot(sa.MetaData, main_db_api.sa.MetaData)
        self.assertIs(sa.select, main_db_api.sa.select)
        meta = sa.MetaData()
        meta.reflect(bind=self.engine)
        read = len(self.statements)
        sa.MetaData().reflect(bind=self.engine)
        self.assertGreater(len(self.statements), read)

    def test_gone_with_the_fixture(self):
        with reflect_once.ReflectOnce():
            pass
        self.assertIs(sa, main_db_api.sa)
