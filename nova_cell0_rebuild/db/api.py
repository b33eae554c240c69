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

"""Where the plugin's tables live, and transactions on them.

By default the tables are in the Nova API database and every transaction
runs through Nova's own API-database engine facade, so a write of ours and
a write of Nova's can share one transaction. ``[cell0_rebuild] connection``
moves them to a database of their own.
"""

import threading

from oslo_config import cfg
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_api_database

CONF = cfg.CONF

_LOCK = threading.Lock()
_OWN_FACADES = {}


def _own_facade(connection):
    with _LOCK:
        facade = _OWN_FACADES.get(connection)
        if facade is None:
            facade = enginefacade.transaction_context()
            facade.configure(connection=connection)
            _OWN_FACADES[connection] = facade
        return facade


def get_context_manager(conf=CONF):
    """Return the engine facade that owns the plugin's tables."""
    connection = conf.cell0_rebuild.connection
    if connection:
        return _own_facade(connection)
    return nova_api_database.context_manager()


def uses_nova_api_database(conf=CONF):
    """Whether the plugin's tables share the Nova API database."""
    return not conf.cell0_rebuild.connection


def writer(context):
    """A writer transaction on the plugin's tables, joined if one is open."""
    return get_context_manager().writer.using(context)


def reader(context):
    """A reader transaction on the plugin's tables."""
    return get_context_manager().reader.using(context)


#: Retries a whole writer transaction that failed with DBDeadlock, as Nova
#: does (``nova/db/main/api.py``). On a Galera cluster with writers on
#: several nodes, the loser of a compare-and-swap usually loses at COMMIT,
#: its write-set refused by certification (MySQL 1213): nothing of it was
#: committed anywhere, so running the transaction again is safe, and the
#: compare-and-swap then finds what the winner wrote and returns the
#: domain outcome. Only for a transaction that is the outermost one: a
#: transaction it joined is retried by whoever opened it.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, retry_interval=0.05,
    inc_retry_interval=True, max_retry_interval=1, jitter=True)


def in_transaction(context):
    """Whether a write of ours on *context* joins a transaction open on it.

    Only in the Nova API database, which Nova's transactions on the same
    context share with us; a facade of our own opens a transaction of its
    own.
    """
    try:
        context.session
    except (db_exc.NoEngineContextEstablished,
            db_exc.ContextNotRequestedError):
        return False
    return uses_nova_api_database()


def after_commit(context, callback):
    """Call *callback* once the transaction open on *context* committed.

    Never if it rolls back (or fails at COMMIT): what the callback
    records in memory must not run ahead of the database.
    """
    sa.event.listen(context.session, 'after_commit',
                    lambda session: callback(), once=True)


def get_engine(conf=CONF):
    return get_context_manager(conf).writer.get_engine()
