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

"""Schema migrations of the plugin's tables (alembic).

The plugin keeps its own alembic version table, so that its history never
touches the ``alembic_version`` table that ``nova-manage api_db sync`` owns
in the same database.
"""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration

from nova_cell0_rebuild.db import api as db_api

VERSION_TABLE = 'cell0_rebuild_alembic_version'

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection):
    config = alembic_config.Config()
    config.set_main_option('script_location', _SCRIPT_LOCATION)
    config.attributes['connection'] = connection
    return config


def db_sync(engine=None, version='head'):
    """Upgrade the plugin's tables to *version* (default: the newest)."""
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_config(connection), version)


def db_version(engine=None):
    """Return the current revision of the plugin's tables, or None."""
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'version_table': VERSION_TABLE})
        return context.get_current_revision()


def sync_needed(engine=None):
    """Why the plugin's tables must be synced before use, or None.

    :returns: one sentence saying to run ``db sync``, when the tables do
        not exist or are not at :func:`head_version`; None when they are.
    """
    current = db_version(engine)
    if current is None:
        return ("The plugin's tables do not exist. Run "
                "nova-cell0-rebuild-manage db sync.")
    head = head_version()
    if current != head:
        return ("The plugin's tables are at revision %(current)s, this "
                "code needs %(head)s. Run nova-cell0-rebuild-manage db "
                "sync." % {'current': current, 'head': head})
    return None


def head_version():
    """Return the newest revision this code knows."""
    from alembic import script as alembic_script
    return alembic_script.ScriptDirectory(_SCRIPT_LOCATION).get_current_head()
