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

"""The bench's harness on MariaDB instead of in-memory SQLite.

SQLite in one process answers a statement without a round trip and never
waits for a row lock, which flatters every design that issues many small
statements. Here every database of the harness (Nova's API database with
the plugin's tables, cell0, cell1 and placement) is a real database of a
real MariaDB server reached over its socket, its schema made by the real
migrations (Nova's alembic ``db_sync``, placement's, the plugin's).

Nova's harness opens its databases as ``sqlite://`` URLs and copies the
schema between them with SQLite's ``iterdump``; :class:`Databases` gives
each such engine a new MariaDB database instead and migrates it, and drops
them all at the end.

:class:`PrivateServer` starts a throw-away ``mariadbd`` of its own (data
directory in a temporary directory, a unix socket, no TCP, no password),
so that ``tox -e bench`` needs the MariaDB server package installed and
nothing configured; ``--mysql-url`` uses a running server instead.
"""

import itertools
import os
import shutil
import subprocess
import tempfile
import time

import fixtures
from nova.db import migration as nova_migration
from nova.tests import fixtures as nova_fixtures
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import provision
import sqlalchemy as sa

from nova_cell0_rebuild.tests.bench import sql

_IN_MEMORY_SQLITE = ('sqlite://', 'sqlite:///:memory:')
_SERVERS = ('mariadbd', 'mysqld')
_INSTALLERS = ('mariadb-install-db', 'mysql_install_db')
_SBIN = ('/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin')


class MariaDBError(Exception):
    """MariaDB is not there or did not start: the run cannot be made."""


def _find(names):
    path = os.pathsep.join([os.environ.get('PATH', '')] + list(_SBIN))
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return found
    raise MariaDBError(
        'none of %s found: install the MariaDB server (Debian: apt-get '
        'install mariadb-server) or give --mysql-url' % ', '.join(names))


class PrivateServer(object):
    """A ``mariadbd`` of the bench's own, stopped by :meth:`stop`."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix='bench-mariadb-')
        self.socket = os.path.join(self.directory, 'mysqld.sock')
        self.process = None

    @property
    def url(self):
        return 'mysql+pymysql://root@localhost/?unix_socket=%s' % self.socket

    def _as_user(self):
        # mariadbd refuses to run as root unless told to.
        return ['--user=root'] if os.geteuid() == 0 else []

    def start(self, timeout=60.0):
        data = os.path.join(self.directory, 'data')
        log = os.path.join(self.directory, 'server.log')
        install = [_find(_INSTALLERS), '--no-defaults', '--datadir=' + data,
                   '--auth-root-authentication-method=normal',
                   '--skip-test-db'] + self._as_user()
        done = subprocess.run(install, capture_output=True, text=True)
        if done.returncode:
            raise MariaDBError('%s failed: %s' % (
                ' '.join(install), (done.stderr or done.stdout)[-2000:]))
        command = [_find(_SERVERS), '--no-defaults', '--datadir=' + data,
                   '--socket=' + self.socket, '--skip-networking',
                   '--pid-file=' + os.path.join(self.directory, 'pid'),
                   '--log-error=' + log,
                   '--innodb-buffer-pool-size=256M',
                   # Each commit reaches the log, flushed to disk once a
                   # second, as Galera clusters commonly run: the bench
                   # measures round trips and locks, not this disk.
                   '--innodb-flush-log-at-trx-commit=2',
                   '--character-set-server=utf8mb4',
                   '--max-connections=1000'] + self._as_user()
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        engine = sa.create_engine(self.url)
        try:
            while True:
                if self.process.poll() is not None:
                    raise MariaDBError('mariadbd exited with %s: %s' % (
                        self.process.returncode, _tail(log)))
                try:
                    with engine.connect():
                        return self
                except sa.exc.OperationalError:
                    if time.monotonic() > deadline:
                        raise MariaDBError('mariadbd did not answer on %s '
                                           'within %ss: %s' % (
                                               self.socket, timeout,
                                               _tail(log)))
                    time.sleep(0.2)
        finally:
            engine.dispose()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def _tail(path, size=2000):
    try:
        with open(path) as log:
            return log.read()[-size:]
    except OSError:
        return '(no log)'


def server_version(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text('SELECT VERSION()')).scalar()
    finally:
        engine.dispose()


class Databases(fixtures.Fixture):
    """Every in-memory SQLite database of the harness, on MariaDB.

    Use it before Nova's ``TestCase.setUp`` makes its databases.

    :param server_url: a SQLAlchemy URL of the server, with a user that
        may create and drop databases; its database part is ignored.
    """

    def __init__(self, server_url):
        super().__init__()
        self.server_url = sa.engine.make_url(server_url)
        self.names = []
        self._numbers = itertools.count(1)

    def _setUp(self):
        self._admin = sa.create_engine(self.server_url.set(database=None))
        self.addCleanup(self._drop_all)
        real_create_engine = engines.create_engine

        def create_engine(sql_connection, *args, **kwargs):
            if sql_connection in _IN_MEMORY_SQLITE:
                sql_connection = self._new_database()
            return real_create_engine(sql_connection, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'oslo_db.sqlalchemy.engines.create_engine', create_engine))
        # Nova's fixtures migrate the first database and copy its schema
        # to the next ones with SQLite's iterdump: migrate each instead.
        self.useFixture(fixtures.MockPatchObject(
            nova_fixtures.Database, '_apply_schema',
            lambda database: nova_migration.db_sync(
                database=database.database, version=database.version)))
        self.useFixture(fixtures.MockPatchObject(
            nova_fixtures.CellDatabases, '_cache_schema',
            lambda cells, connection_str: nova_migration.db_sync(
                database='main')))
        # Placement's fixture empties its database table by table at the
        # end, which MariaDB's foreign keys refuse in that order; the
        # databases are dropped whole below instead.
        self.useFixture(fixtures.MockPatchObject(
            provision.Backend, 'drop_all_objects', lambda *args: None))

    def _new_database(self):
        name = 'bench_%d_%d' % (os.getpid(), next(self._numbers))
        with sql.muted():
            with self._admin.begin() as conn:
                conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
                conn.execute(sa.text(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4' % name))
        self.names.append(name)
        return self.server_url.set(database=name).render_as_string(
            hide_password=False)

    def _drop_all(self):
        with sql.muted():
            with self._admin.begin() as conn:
                for name in self.names:
                    conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        self._admin.dispose()
