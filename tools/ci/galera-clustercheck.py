#!/usr/bin/env python3
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

"""A clustercheck for HAProxy: is this Galera node fit to take writes?

What Percona's and Kolla's clustercheck answer, in the standard library:
HTTP 200 when the node is Synced (``wsrep_local_state`` 4) and
``wsrep_ready`` is ON, 503 otherwise (a node that lost its quorum and
answers every query with error 1047, a joiner, a donor, a dead node).
HAProxy's ``option mysql-check`` only logs in, so it keeps a non-Primary
node UP; ``option httpchk`` against this does not.

Usage (tools/ci/galera-cluster.sh haproxy-up starts it)::

    galera-clustercheck.py PORT=SOCKET [PORT=SOCKET ...]

One HTTP listener on 127.0.0.1:PORT per node, each asking its node as
root over the node's unix socket with the ``mariadb`` client.
"""

import http.server
import subprocess
import sys
import threading

QUERY = ("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM "
         "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN "
         "('WSREP_LOCAL_STATE', 'WSREP_READY')")


def node_state(socket):
    """{'WSREP_LOCAL_STATE': '4', 'WSREP_READY': 'ON'}, or {} if down."""
    try:
        done = subprocess.run(
            ['mariadb', '--no-defaults', '-uroot', '-S', socket,
             '--connect-timeout=1', '-Nse', QUERY],
            capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode:
        return {}
    return dict(line.split('\t', 1) for line in done.stdout.splitlines()
                if '\t' in line)


def handler_for(socket):
    class Check(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            state = node_state(socket)
            synced = (state.get('WSREP_LOCAL_STATE') == '4' and
                      state.get('WSREP_READY') == 'ON')
            body = ('Galera node is synced.\n' if synced else
                    'Galera node is not synced: %s\n' % state).encode()
            self.send_response(200 if synced else 503)
            self.send_header('Content-Type', 'text/plain')
            self.send_header('Content-Length', str(len(body)))
            self.send_header('Connection', 'close')
            self.end_headers()
            self.wfile.write(body)

        do_OPTIONS = do_GET

        def log_message(self, *args):
            pass  # HAProxy asks every second

    return Check


def main(argv):
    servers = []
    for argument in argv:
        port, _, socket = argument.partition('=')
        servers.append(http.server.ThreadingHTTPServer(
            ('127.0.0.1', int(port)), handler_for(socket)))
    threads = [threading.Thread(target=server.serve_forever)
               for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == '__main__':
    main(sys.argv[1:])
