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

"""A server as Nova recorded it, in a form two twins can be compared in.

A rebuilt server must land as its twin created directly on a cloud with
room: the same API view, cell instance, BDMs, PCI requests, RequestSpec,
allocations and port bindings. What legitimately differs between two
servers of one shape is taken out here, each with its reason; everything
else is compared as Nova wrote it.
"""

import datetime

from nova import context as nova_context
from nova.network import model as network_model
from nova import objects as nova_objects
from nova.objects import base as nova_base

#: Identity and time: two servers of one shape never share these.
_DROPPED_KEYS = frozenset([
    # Database ids of the server's own rows and the names made of them
    # (the rows' own 'id' keys are taken out in Snapshot.sections).
    'instance_id', 'OS-EXT-SRV-ATTR:instance_name', 'ec2_ids',
    # Times.
    'created_at', 'updated_at', 'deleted_at', 'launched_at', 'created',
    'updated', 'OS-SRV-USG:launched_at', 'scheduled_at',
    # One per create request, and the links made of the server's uuid.
    'reservation_id', 'OS-EXT-SRV-ATTR:reservation_id', 'links',
    # The fake driver's console and the host's service records.
    'services',
    # Generations of placement objects count every write to them.
    'generation', 'consumer_generation',
])

#: Every joined field of an Instance but 'fault' (the API view shows it).
INSTANCE_JOINS = ['metadata', 'system_metadata', 'info_cache',
                  'security_groups', 'flavor', 'keypairs', 'trusted_certs',
                  'pci_requests', 'numa_topology', 'device_metadata', 'tags',
                  'pci_devices', 'vcpu_model', 'migration_context',
                  'resources']

#: Port attributes Nova writes when it binds a port.
_PORT_KEYS = ('binding:host_id', 'binding:profile', 'binding:vnic_type',
              'device_owner', 'device_id', 'fixed_ips', 'mac_address',
              'network_id', 'resource_request')

_BDM_IDENTITY = ('volume_id', 'attachment_id', 'uuid', 'connection_info')


def flatten(value):
    """Nova objects, network models and lists as plain data."""
    if isinstance(value, nova_base.NovaObject):
        return {field: flatten(getattr(value, field))
                for field in sorted(value.fields)
                if value.obj_attr_is_set(field)}
    if isinstance(value, network_model.NetworkInfo):
        return [flatten(vif) for vif in value]
    if isinstance(value, dict):
        return {key: flatten(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [flatten(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted(flatten(item) for item in value)
    if isinstance(value, datetime.datetime):
        return '<time>'
    return value


def normalize(value, own_ids, host_names=()):
    """*value* without identity: own uuids become ``<own N>`` by order.

    :param own_ids: {uuid: token} of what belongs to this server only (its
        uuid, ports, volumes, PCI requests); anything else (images,
        flavors, networks, groups) is compared as it is.
    :param host_names: host names to replace by ``<host>`` when the twins
        may land on different hosts.
    """
    if isinstance(value, dict):
        return {normalize(key, own_ids, host_names):
                normalize(item, own_ids, host_names)
                for key, item in value.items() if key not in _DROPPED_KEYS}
    if isinstance(value, list):
        return [normalize(item, own_ids, host_names) for item in value]
    if isinstance(value, str):
        for uuid, token in own_ids.items():
            value = value.replace(uuid, token)
        for host in host_names:
            if value == host or value.startswith(host + ':'):
                value = '<host>' + value[len(host):]
        return value
    return value


class Snapshot(object):
    """What Nova holds of one server, read once it is ACTIVE.

    :param test: the functional test (its API clients and fixtures).
    """

    def __init__(self, test, server_id):
        self.test = test
        self.server_id = server_id
        context = test.admin_context
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            context, server_id)
        with nova_context.target_cell(context,
                                      mapping.cell_mapping) as cctxt:
            self.instance = nova_objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=INSTANCE_JOINS)
            self.bdms = nova_objects.BlockDeviceMappingList.\
                get_by_instance_uuid(cctxt, server_id)
        self.request_spec = nova_objects.RequestSpec.get_by_instance_uuid(
            context, server_id)
        self.view = test.admin_api.get_server(server_id)
        self.ports = test.neutron.list_ports(
            True, device_id=server_id)['ports']
        self.allocations = test.placement.get(
            '/allocations/%s' % server_id,
            version='1.28').body['allocations']

    def own_ids(self):
        """Every uuid that names a part of this server alone, in order."""
        ids = [self.server_id]
        ids += [port['id'] for port in self._ports_in_order()]
        for bdm in self.bdms:
            ids += [getattr(bdm, field) for field in _BDM_IDENTITY[:3]
                    if bdm.obj_attr_is_set(field) and getattr(bdm, field)]
        if self.instance.pci_requests:
            ids += [request.request_id
                    for request in self.instance.pci_requests.requests
                    if request.request_id]
        ids += [device.uuid for device in self.instance.pci_devices or []
                if device.obj_attr_is_set('uuid')]
        tokens = {}
        for uuid in ids:
            tokens.setdefault(uuid, '<own %d>' % len(tokens))
        for port in self.ports:
            # The name of the port's device on the host is made of its id.
            tokens[('tap' + port['id'])[:network_model.NIC_NAME_LEN]] = (
                '<tap of %s>' % tokens[port['id']])
        return tokens

    def sections(self, host_names=()):
        """The comparable sections, normalized."""
        provider_names = {}
        for provider in self.allocations:
            provider_names[provider] = self.test.placement.get(
                '/resource_providers/%s' % provider).body['name']
        instance = flatten(self.instance)
        instance.pop('id')
        for device in instance.get('pci_devices', {}).get('objects', []):
            device.pop('id', None)
        request_spec = flatten(self.request_spec)
        request_spec.pop('id', None)
        if request_spec.get('instance_group'):
            # Not stored in the RequestSpec: read from the group, as it is
            # now (the twins are members in turn).
            request_spec['instance_group'].pop('members', None)
            request_spec['instance_group'].pop('hosts', None)
        sections = {
            'server': self.view,
            'instance': instance,
            'bdms': [self._bdm(bdm) for bdm in sorted(
                self.bdms, key=lambda b: (b.boot_index is None,
                                          b.boot_index, b.device_name))],
            'request_spec': request_spec,
            'allocations': {
                provider_names[provider]: allocation['resources']
                for provider, allocation in self.allocations.items()},
            'ports': [{key: port.get(key) for key in _PORT_KEYS}
                      for port in self._ports_in_order()],
        }
        return normalize(sections, self.own_ids(), host_names)

    def _ports_in_order(self):
        """The server's ports in the order of its NICs (as requested)."""
        nics = [vif['id'] for vif in
                self.instance.info_cache.network_info or []]
        return sorted(self.ports, key=lambda port: (
            nics.index(port['id']) if port['id'] in nics else len(nics),
            port['id']))

    @staticmethod
    def _bdm(bdm):
        data = flatten(bdm)
        # A new volume or attachment per server: whether there is one is
        # compared, not its id.
        for field in _BDM_IDENTITY:
            if data.get(field):
                data[field] = '<set>'
        data.pop('instance', None)
        data.pop('id', None)
        return data


def differences(expected, actual, path=''):
    """Where two normalized sections differ, as readable lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = '%s.%s' % (path, key) if path else str(key)
            if key not in actual:
                lines.append('%s: only in the created twin: %r'
                             % (where, expected[key]))
            elif key not in expected:
                lines.append('%s: only in the rebuilt server: %r'
                             % (where, actual[key]))
            else:
                lines += differences(expected[key], actual[key], where)
        return lines
    if (isinstance(expected, list) and isinstance(actual, list) and
            len(expected) == len(actual)):
        lines = []
        for index, (left, right) in enumerate(zip(expected, actual)):
            lines += differences(left, right, '%s[%d]' % (path, index))
        return lines
    if expected != actual:
        return ['%s: created %r, rebuilt %r' % (path, expected, actual)]
    return []
