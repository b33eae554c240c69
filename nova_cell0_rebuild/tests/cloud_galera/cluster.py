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

"""The minicloud's Galera cluster, as the scenarios reach it.

Connections of our own to one node or through HAProxy, the cluster's
script (kill -9 a node, start it again), HAProxy's view of the nodes, and
the rows the scenarios hold locked to stop a move at a step.
"""

import subprocess
import time

import pymysql

from nova_cell0_rebuild.tests.cloud import clients


class NoCluster(Exception):
    pass


class Cluster(object):
    """The three nodes of a minicloud up with MINICLOUD_DATABASE=galera."""

    def __init__(self, cloud):
        self.cloud = cloud
        self.galera = cloud.description.get('galera')
        if cloud.description.get('database') != 'galera' or not self.galera:
            raise NoCluster(
                'the minicloud in %s runs no Galera cluster: run these '
                'tests with "tox -e cloud-galera"' % cloud.workdir)

    def connect(self, database, node=None, timeout=5):
        """A connection of our own: to *node* (1..3), or through HAProxy."""
        port = (self.galera['node_ports'][node - 1] if node
                else self.galera['haproxy_port'])
        return pymysql.connect(
            host='127.0.0.1', port=port, user='cloud',
            password=self.cloud.description['password'], database=database,
            autocommit=True, connect_timeout=timeout, read_timeout=30,
            write_timeout=30)

    def query(self, database, sql, args=(), node=None):
        """One statement on a fresh connection; :returns: its rows."""
        connection = self.connect(database, node)
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql, args)
                return cursor.fetchall()
        finally:
            connection.close()

    def script(self, *args):
        env = {'GALERA_BASE': self.galera['base'],
               'GALERA_PORT_OFFSET': str(self.galera['port_offset']),
               'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'}
        return subprocess.run([self.galera['script']] + list(args),
                              capture_output=True, text=True, env=env,
                              timeout=300, check=True).stdout

    def kill(self, node):
        """kill -9 a node, as a crashed database server."""
        self.script('kill', str(node))

    def start(self, node):
        """Start a killed node; it rejoins (IST) and is Synced on return."""
        self.script('start', str(node))

    def haproxy_status(self):
        """{'n1': 'UP', ...} as HAProxy's stats page shows them."""
        output = subprocess.run(
            ['curl', '-s', 'http://127.0.0.1:%d/;csv'
             % self.galera['stats_port']], capture_output=True, text=True,
            timeout=10).stdout
        status = {}
        for line in output.splitlines():
            fields = line.split(',')
            if fields[0] == 'galera' and fields[1] in ('n1', 'n2', 'n3'):
                status[fields[1]] = fields[17]
        return status

    def wait_haproxy(self, wanted, timeout=60):
        """Wait until HAProxy marks the nodes as *wanted* ({'n1': 'UP'})."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.haproxy_status()
            if all(status.get(k) == v for k, v in wanted.items()):
                return status
            if time.monotonic() > deadline:
                raise AssertionError('HAProxy shows %s, not %s, after %s s'
                                     % (status, wanted, timeout))
            time.sleep(0.5)

    def seconds_to_write(self, timeout=60):
        """Seconds until a write through HAProxy commits (the failover)."""
        started = time.monotonic()
        while True:
            try:
                self.query('galera_probe', 'REPLACE INTO probe VALUES (1, %s)',
                           (time.time(),))
                return round(time.monotonic() - started, 2)
            except pymysql.err.MySQLError:
                if time.monotonic() - started > timeout:
                    raise
                time.sleep(0.1)

    def make_probe_table(self):
        self.query('mysql', 'CREATE DATABASE IF NOT EXISTS galera_probe')
        self.query('galera_probe', 'CREATE TABLE IF NOT EXISTS probe '
                   '(id INT PRIMARY KEY, at DOUBLE)')

    def journal_step(self, uuid):
        rows = self.query('nova_api', 'SELECT step, status FROM '
                          'cell0_rebuild_move_journal WHERE instance_uuid = '
                          '%s', (uuid,))
        return rows[0] if rows else None

    def lock_row(self, database, table, column, uuid):
        """Hold one row locked on the writer (n1): a move writing it waits.

        Until the connection is closed or rolled back, or the node dies.
        """
        connection = self.connect(database, node=1)
        connection.autocommit(False)
        with connection.cursor() as cursor:
            cursor.execute('BEGIN')
            count = cursor.execute('SELECT * FROM %s WHERE %s = %%s FOR UPDATE'
                                   % (table, column), (uuid,))
        if count != 1:
            raise AssertionError('%s.%s: %d rows for %s' % (
                database, table, count, uuid))
        return connection

    def transactions(self):
        """(state, query) of every InnoDB transaction on n1, the writer."""
        return self.query('information_schema', 'SELECT trx_state, '
                          'trx_query FROM INNODB_TRX', node=1)

    def waiting_on_lock(self, statement_start):
        """Whether a transaction on n1 waits for a lock in a statement.

        :param statement_start: e.g. 'DELETE FROM instances'.
        """
        return any(state == 'LOCK WAIT' and ' '.join(
            (query or '').split()).upper().startswith(
                statement_start.upper())
            for state, query in self.transactions())

    def instance_rows(self, uuid):
        """{cell: live instance rows of *uuid*}, through HAProxy."""
        return {cell: self.query(cell, 'SELECT COUNT(*) FROM instances WHERE '
                                 'uuid = %s AND deleted = 0', (uuid,))[0][0]
                for cell in ('nova_cell0', 'nova_cell1')}


def close_quietly(connection):
    try:
        connection.close()
    except Exception:  # the node it was on was killed
        pass


__all__ = ['Cluster', 'NoCluster', 'close_quietly', 'clients']
