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

"""The plugin's tables on real SQLite, MySQL/MariaDB and PostgreSQL.

oslo.db's opportunistic fixtures provision a fresh database per test with
the ``openstack_citest`` user. They skip when a server is unreachable, which
is right on a laptop and wrong in CI: with NOVA_CELL0_REBUILD_REQUIRE_DBS set
(as .ci/run does) an unreachable server fails the test instead.
"""

import logging
import os

import fixtures
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures
from oslo_utils import strutils
from oslotest import base as oslo_base

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.tests import quiet_output

REQUIRE_DBS = strutils.bool_from_string(
    os.environ.get('NOVA_CELL0_REBUILD_REQUIRE_DBS', '0'))


class _EmptyDatabase(object):
    """Provision an empty database; tests migrate it themselves."""

    def __init__(self, test):
        super().__init__(test=test)
        self._facade = test.facade

    def get_enginefacade(self):
        return self._facade


class SQLiteFixture(_EmptyDatabase, test_fixtures.OpportunisticDbFixture):
    pass


class MySQLFixture(_EmptyDatabase, test_fixtures.MySQLOpportunisticFixture):
    pass


class PostgresFixture(_EmptyDatabase,
                      test_fixtures.PostgresqlOpportunisticFixture):
    pass


class BackendTestCase(quiet_output.CappedDetails,
                      test_fixtures.OpportunisticDBTestMixin,
                      oslo_base.BaseTestCase):
    """A test on one database backend, with the plugin pointed at it."""

    FIXTURE = SQLiteFixture
    SKIP_ON_UNAVAILABLE_DB = not REQUIRE_DBS

    def setUp(self):
        # A facade of the test's own, bound to the provisioned database.
        self.facade = enginefacade.transaction_context()
        if not quiet_output.debugging():
            # oslo.db logs each database it provisions and drops at INFO:
            # kept with the test, shown if it fails.
            self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.db.api.get_context_manager',
            return_value=self.facade))
        self.engine = self.facade.writer.get_engine()
        self.assertIs(self.engine, db_api.get_engine())


def backends(mixin):
    """Three concrete TestCase classes, one per backend, from a mixin."""
    classes = {}
    for name, fixture in (('SQLite', SQLiteFixture),
                          ('MySQL', MySQLFixture),
                          ('PostgreSQL', PostgresFixture)):
        cls_name = '%sOn%s' % (mixin.__name__.lstrip('_'), name)
        classes[cls_name] = type(cls_name, (mixin, BackendTestCase),
                                 {'FIXTURE': fixture,
                                  '__module__': mixin.__module__})
    return classes
