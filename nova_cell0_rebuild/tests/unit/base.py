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

"""Base classes and fixtures of the unit tests."""

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests import quiet_output

CONF = cfg.CONF


class Database(fixtures.Fixture):
    """A private in-memory SQLite database holding the plugin's tables.

    It goes through ``[cell0_rebuild] connection``, the same path an
    operator uses to keep the tables out of the Nova API database.
    """

    def __init__(self, conf):
        super().__init__()
        self.conf = conf

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.db.api._OWN_FACADES', {}))
        self.conf.set_override('connection', 'sqlite://',
                               group='cell0_rebuild')
        migration.db_sync(db_api.get_engine())


class TestCase(quiet_output.CappedDetails, base.BaseTestCase):
    """A unit test with the plugin's options registered on CONF."""

    def setUp(self):
        super().setUp()
        plugin_conf.register_opts(CONF)
        self.conf = self.useFixture(config_fixture.Config(CONF)).conf
        objects.register_all()


class DBTestCase(TestCase):
    """A unit test with the plugin's tables in a private database."""

    def setUp(self):
        super().setUp()
        self.useFixture(Database(self.conf))
