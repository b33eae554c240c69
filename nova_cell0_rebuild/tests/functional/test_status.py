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

"""nova-cell0-rebuild-status upgrade check on real Nova databases.

The command's check methods are called directly: the harness has already
parsed the configuration the command would read.
"""

import os

import fixtures
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from nova_cell0_rebuild.cmd import status
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import request_ids

Code = upgradecheck.Code

#: The first revision of the plugin's tables.
FIRST_REVISION = '6f2a0c1d9b3e'


class _StatusTestCase(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.command = status.UpgradeCommands()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _own_database(self, name, revision=None):
        """Move the plugin's tables to a new SQLite file, at *revision*."""
        url = 'sqlite:///%s' % os.path.join(self.tmp, name)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.db.api._OWN_FACADES', {}))
        self.flags(connection=url, group='cell0_rebuild')
        if revision is not None:
            migration.db_sync(db_api.get_engine(), version=revision)


class DatabaseCheckTest(_StatusTestCase):

    def test_at_head(self):
        result = self.command._check_database()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn(migration.head_version(), result.details)

    def test_tables_not_created(self):
        self._own_database('empty.db')
        result = self.command._check_database()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('do not exist', result.details)
        self.assertIn('nova-cell0-rebuild-manage db sync', result.details)

    def test_behind(self):
        self._own_database('old.db', revision=FIRST_REVISION)
        result = self.command._check_database()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('at revision %s' % FIRST_REVISION, result.details)
        self.assertIn(migration.head_version(), result.details)

    def test_unreachable(self):
        self.flags(connection='sqlite:////nonexistent/dir/plugin.db',
                   group='cell0_rebuild')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.db.api._OWN_FACADES', {}))
        result = self.command._check_database()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('cannot be read', result.details)


class StatementCounter(fixtures.Fixture):
    """Count the SELECTs on one table through an engine."""

    def __init__(self, engine, table):
        super().__init__()
        self.engine = engine
        self.table = table
        self.count = 0

    def _count(self, conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith('SELECT') and (
                self.table in statement):
            self.count += 1

    def _setUp(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._count)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', self._count)


class UnrecordedServersCheckTest(_StatusTestCase):

    def setUp(self):
        super().setUp()
        # Servers' create actions carry the request id of their create, as
        # in nova-api; a record is also found by it.
        self.useFixture(request_ids.RequestIdsAsInNovaApi())

    def _forget(self, **filters):
        """Delete create records, or only blank their keys."""
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).filter_by(**filters).delete()

    def _keep_only_request_id(self, server_id):
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).filter_by(
                instance_uuid=server_id).update(
                {'instance_uuid': None, 'reservation_id': None})

    def _check(self, code):
        result = self.command._check_unrecorded()
        self.assertEqual(code, result.code, result.details)
        return result.details

    def test_every_server_recorded(self):
        self.assertIn('Every server', self._check(Code.SUCCESS))
        servers = [self._create_buried_server() for _ in range(3)]
        # Found by the request id of its create action alone.
        self._keep_only_request_id(servers[0]['id'])
        self.assertIn('Every server', self._check(Code.SUCCESS))

    def test_unrecorded_servers_warn_while_the_record_gate_refuses(self):
        servers = [self._create_buried_server() for _ in range(3)]
        self._forget(instance_uuid=servers[1]['id'])
        self._forget(instance_uuid=servers[2]['id'])
        details = self._check(Code.WARNING)
        self.assertIn('2 server(s) in cell0 have no create record', details)
        self.assertIn('record gate will refuse', details)
        self.assertIn('allow_unrecorded', details)
        # The same count, a server at a time.
        self.command.page_size = 1
        self.assertIn('2 server(s)', self._check(Code.WARNING))

        self.flags(allow_unrecorded=True, group='cell0_rebuild')
        self.assertIn('2 server(s)', self._check(Code.SUCCESS))
        self.flags(allow_unrecorded=False, group='cell0_rebuild')
        self.flags(enabled_gates=['state', 'quota'], group='cell0_rebuild')
        self.assertIn('2 server(s)', self._check(Code.SUCCESS))

    def test_deleted_servers_do_not_count(self):
        server = self._create_buried_server()
        self._forget(instance_uuid=server['id'])
        self._check(Code.WARNING)
        self._delete_server(server)
        self._check(Code.SUCCESS)

    def _record_selects(self, unrecorded):
        for _ in range(unrecorded):
            self._forget(instance_uuid=self._create_buried_server()['id'])
        counter = self.useFixture(StatementCounter(
            db_api.get_engine(), models.CreateRecord.__tablename__))
        self._check(Code.WARNING)
        return counter.count

    def test_queries_per_page_not_per_server(self):
        one = self._record_selects(1)
        # One query per key kind: instance uuids, reservation ids, request
        # ids of create actions.
        self.assertEqual(3, one)
        self.assertEqual(one, self._record_selects(3))

    def test_tables_missing(self):
        self._create_buried_server()
        self._own_database('empty.db')
        details = self._check(Code.FAILURE)
        self.assertIn('cannot be counted', details)

    def test_cell0_not_mapped(self):
        self._cell0().destroy()
        self.assertIn('cell0 is not mapped', self._check(Code.FAILURE))
