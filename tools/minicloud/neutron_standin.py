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

"""The smallest honest stand-in for Neutron's API: a cloud with no networks.

No neutron-server runs in the minicloud (it needs agents or an SDN to bind
ports). Servers there are created with ``networks='none'``; Nova still asks
Neutron for their ports, security groups and extensions, on create and on
delete. This answers every GET of a collection with an empty list, the
version documents as Neutron does, and anything else with Neutron's 404. It
does not check tokens: nothing it returns is private.

Run: ``python neutron_standin.py PORT``.
"""

import http.server
import json
import sys

VERSIONS = {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': ''}]}]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split('?', 1)[0].rstrip('/')
        parts = [part for part in path.split('/') if part]
        if parts in ([], ['v2.0']):
            return self._answer(200, VERSIONS)
        if len(parts) == 2 and parts[0] == 'v2.0':
            # /v2.0/security-groups -> {"security_groups": []}
            collection = parts[1].replace('.json', '').replace('-', '_')
            return self._answer(200, {collection: []})
        self._not_found()

    def _not_found(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self._answer(404, {'NeutronError': {
            'type': 'HTTPNotFound', 'detail': '',
            'message': 'The minicloud has no Neutron: %s %s'
                       % (self.command, self.path)}})

    do_POST = do_PUT = do_DELETE = _not_found

    def log_message(self, format, *args):
        sys.stderr.write('%s %s\n' % (self.log_date_time_string(),
                                      format % args))


def main(port):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler)
    server.serve_forever()


if __name__ == '__main__':
    main(int(sys.argv[1]))
