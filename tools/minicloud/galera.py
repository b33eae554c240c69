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

"""Nova's databases on a MariaDB Galera cluster, as operators run them.

``MINICLOUD_DATABASE=galera`` (``tox -e cloud-galera``): placement's,
Nova's API, cell0 and cell1 databases (and with them the plugin's tables,
in the API database) go to a three-node Galera cluster on loopback that
``tools/ci/galera-cluster.sh`` starts, behind HAProxy with one writer (n1)
and two backups, each node checked by a clustercheck. Every Nova service
goes through HAProxy, but nova-api-2, whose API database is node 2 itself:
the two nova-api then write through different nodes, as a multi-writer
deployment does. Keystone and Glance stay on the plain MariaDB.

The cluster is a second one: its own directory (``GALERA_BASE``) and
ports (``GALERA_PORT_OFFSET``, default 1000: SQL 14306-14308, HAProxy
14300), so it runs beside the one ``tox -e galera`` uses.
"""

import os
import subprocess

import configs

SCRIPT = os.path.join(configs.SOURCE_TREE, 'tools', 'ci', 'galera-cluster.sh')
#: The databases that go to the cluster.
DATABASES = configs.GALERA_DATABASES


def enabled():
    return configs.DATABASE == 'galera'


def env():
    """The environment galera-cluster.sh needs for this cloud's cluster."""
    return dict(os.environ, GALERA_BASE=configs.GALERA_BASE,
                GALERA_PORT_OFFSET=str(configs.GALERA_PORT_OFFSET))


def run(procs, *args):
    """galera-cluster.sh ARGS, its output in the cloud's galera.log."""
    procs.run('galera', [SCRIPT] + list(args), env=env())


def up(procs):
    """A fresh cluster (any old one of this cloud removed), HAProxy, users."""
    run(procs, 'clean')
    run(procs, 'up')
    run(procs, 'haproxy-up')
    statements = ["CREATE USER IF NOT EXISTS 'cloud'@'%%' IDENTIFIED BY '%s'"
                  % configs.PASSWORD,
                  "GRANT ALL PRIVILEGES ON *.* TO 'cloud'@'%'"]
    statements += ['CREATE DATABASE %s CHARACTER SET utf8mb4' % name
                   for name in DATABASES]
    run(procs, 'sql', '1', '; '.join(statements))


def down():
    """Stop HAProxy, the clustercheck and the nodes (by their PIDs)."""
    subprocess.run([SCRIPT, 'clean'], env=env(), check=False,
                   capture_output=True, timeout=120)


def description():
    """What the scenario needs to know of the cluster (cloud.json)."""
    return {'base': configs.GALERA_BASE,
            'port_offset': configs.GALERA_PORT_OFFSET,
            'script': SCRIPT,
            'haproxy_port': configs.PORTS['galera-haproxy'],
            'stats_port': configs.PORTS['galera-stats'],
            'node_ports': [configs.PORTS['galera-n%d' % n]
                           for n in (1, 2, 3)]}
