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

"""The smallest honest stand-in for Neutron's API: one network, real ports.

No neutron-server runs in the minicloud: binding a port needs an agent or
an SDN. This answers the calls Nova and a user's client make, from memory:
one shared network with one IPv4 subnet (:data:`NETWORK`, :data:`SUBNET`),
ports created, shown, listed (with Neutron's query filters), updated (a
port given a host is bound, VIF type ``ovs``) and deleted; every other
collection is empty, the quota unlimited, the extension list empty (so
Nova binds ports the legacy way). It does not check tokens: a port's
project is what its creator says (``project_id`` in the body).

Run: ``python neutron_standin.py PORT``.
"""

import http.server
import ipaddress
import json
import sys
import threading
import urllib.parse
import uuid

NETWORK = {
    'id': '5d4e7b1c-0a6f-4c55-9d3e-7f1a2b3c4d5e', 'name': 'shared',
    'subnets': ['8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d'],
    'tenant_id': '', 'project_id': '', 'shared': True,
    'admin_state_up': True, 'status': 'ACTIVE', 'mtu': 1500,
    'router:external': False, 'port_security_enabled': True,
}
SUBNET = {
    'id': NETWORK['subnets'][0], 'network_id': NETWORK['id'],
    'name': 'shared-v4', 'cidr': '10.20.0.0/24', 'ip_version': 4,
    'gateway_ip': '10.20.0.1', 'enable_dhcp': False,
    'dns_nameservers': [], 'host_routes': [],
    'allocation_pools': [{'start': '10.20.0.10', 'end': '10.20.0.250'}],
    'ipv6_address_mode': None, 'ipv6_ra_mode': None,
    'tenant_id': '', 'project_id': '',
}
VERSIONS = {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': ''}]}]}


class State(object):
    """The ports, networks and subnets, behind one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.resources = {'networks': {NETWORK['id']: NETWORK},
                          'subnets': {SUBNET['id']: SUBNET},
                          'ports': {}}
        self._addresses = (str(address) for address in
                           ipaddress.ip_network(SUBNET['cidr']).hosts()
                           if int(str(address).rsplit('.', 1)[1]) >= 10)

    def create_port(self, body):
        port_id = str(uuid.uuid4())
        project = body.get('project_id') or body.get('tenant_id') or ''
        port = {
            'id': port_id, 'name': body.get('name', ''),
            'network_id': body['network_id'], 'tenant_id': project,
            'project_id': project, 'admin_state_up': True,
            'status': 'DOWN', 'device_id': '', 'device_owner': '',
            'mac_address': 'fa:16:3e:%02x:%02x:%02x' % tuple(
                uuid.UUID(port_id).bytes[:3]),
            'fixed_ips': [{'subnet_id': SUBNET['id'],
                           'ip_address': next(self._addresses)}],
            'security_groups': [], 'port_security_enabled': True,
            'binding:host_id': '', 'binding:vif_type': 'unbound',
            'binding:vif_details': {}, 'binding:vnic_type': 'normal',
            'binding:profile': {}, 'resource_request': None,
            'dns_name': '', 'allowed_address_pairs': [],
            'extra_dhcp_opts': [], 'qos_policy_id': None,
        }
        self.resources['ports'][port_id] = port
        return port

    def update_port(self, port, body):
        port.update(body)
        bound = bool(port.get('binding:host_id'))
        port['binding:vif_type'] = 'ovs' if bound else 'unbound'
        port['status'] = 'ACTIVE' if bound else 'DOWN'
        return port


STATE = State()


def _matches(resource, filters):
    for key, wanted in filters.items():
        if key in ('fields', 'limit', 'marker', 'sort_key', 'sort_dir'):
            continue
        if key == 'fixed_ips':
            continue  # "ip_address=..." filters: not used by the scenario
        value = resource.get(key)
        empty = value in ('', None) and '' in wanted
        if str(value) not in wanted and not empty:
            return False
    return True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _answer(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b''
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(length) or b'{}')

    def _route(self):
        url = urllib.parse.urlsplit(self.path)
        parts = [part.replace('.json', '')
                 for part in url.path.split('/') if part]
        return parts, urllib.parse.parse_qs(url.query, keep_blank_values=True)

    def do_GET(self):
        parts, query = self._route()
        if parts in ([], ['v2.0']):
            return self._answer(200, VERSIONS)
        if parts[:1] != ['v2.0'] or len(parts) not in (2, 3):
            return self._not_found()
        collection = parts[1].replace('-', '_')
        if collection == 'quotas' and len(parts) == 3:
            return self._answer(200, {'quota': {'port': -1, 'network': -1,
                                                'subnet': -1}})
        with STATE.lock:
            found = STATE.resources.get(collection, {})
            if len(parts) == 3:
                if parts[2] not in found:
                    return self._not_found()
                return self._answer(200, {collection[:-1]:
                                          found[parts[2]]})
            return self._answer(200, {collection: [
                resource for resource in found.values()
                if _matches(resource, query)]})

    def do_POST(self):
        parts, _ = self._route()
        if parts != ['v2.0', 'ports']:
            return self._not_found()
        with STATE.lock:
            port = STATE.create_port(self._body()['port'])
        self._answer(201, {'port': port})

    def do_PUT(self):
        parts, _ = self._route()
        body = self._body()
        with STATE.lock:
            port = STATE.resources['ports'].get(
                parts[2] if len(parts) == 3 else None)
            if parts[:2] != ['v2.0', 'ports'] or port is None:
                return self._not_found()
            self._answer(200, {'port': STATE.update_port(port,
                                                         body['port'])})

    def do_DELETE(self):
        parts, _ = self._route()
        with STATE.lock:
            if parts[:2] != ['v2.0', 'ports'] or len(parts) != 3 \
                    or STATE.resources['ports'].pop(parts[2], None) is None:
                return self._not_found()
        self._answer(204)

    def _not_found(self):
        self._answer(404, {'NeutronError': {
            'type': 'HTTPNotFound', 'detail': '',
            'message': 'Not in the minicloud\'s Neutron stand-in: %s %s'
                       % (self.command, self.path)}})

    def log_message(self, format, *args):
        sys.stderr.write('%s %s\n' % (self.log_date_time_string(),
                                      format % args))


def main(port):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler)
    server.serve_forever()


if __name__ == '__main__':
    main(int(sys.argv[1]))
