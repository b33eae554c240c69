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

"""Placement's answer for buried servers, asked as the scheduler asks.

Real Nova in-process with Nova's placement fixture: servers are buried in
cell0 while no compute exists, then computes with known inventory start,
and the pending dispatcher's pre-check (adapters/nova_placement) is asked
whether each buried server would fit. Every request reaching placement is
recorded at placement's own WSGI handler.
"""

from urllib import parse

import fixtures
from nova import context as nova_context
from nova.image import glance
from nova import objects as nova_objects
from placement import handler as placement_handler

from nova_cell0_rebuild.adapters import nova_placement
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.functional import base


class PlacementPreCheckTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.placement_requests = []
        real_call = placement_handler.PlacementHandler.__call__
        requests = self.placement_requests

        def recording_call(handler, environ, start_response):
            requests.append((environ['REQUEST_METHOD'],
                             environ['PATH_INFO'],
                             environ.get('QUERY_STRING', ''),
                             environ.get('HTTP_OPENSTACK_API_VERSION')))
            return real_call(handler, environ, start_response)
        self.useFixture(fixtures.MonkeyPatch(
            'placement.handler.PlacementHandler.__call__', recording_call))

    def _flavor(self, name, memory_mb, extra_specs=None):
        flavor = self.admin_api.post_flavor({'flavor': {
            'name': name, 'ram': memory_mb, 'vcpus': 1, 'disk': 1}})
        if extra_specs:
            self.admin_api.post_extra_spec(
                flavor['id'], {'extra_specs': extra_specs})
        return flavor['id']

    def _memory_per_host(self):
        """MEMORY_MB capacity of host1's provider (all hosts are alike)."""
        provider = self.placement.get(
            '/resource_providers?name=host1').body['resource_providers'][0]
        inventory = self.placement.get(
            '/resource_providers/%s/inventories' % provider['uuid']
        ).body['inventories']['MEMORY_MB']
        return int((inventory['total'] - inventory['reserved'])
                   * inventory['allocation_ratio'])

    def _shape(self, server_id, requested_host=None):
        """The shape of a buried server, its RequestSpec completed as the
        move completes it.
        """
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(admin, self._cell0()) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['flavor'])
        image = glance.API().get(admin, instance.image_ref)
        spec = nova_placement.completed_request_spec(
            admin, instance, image, networks=None,
            requested_host=requested_host)
        return nova_placement.request_shape(admin, spec)

    def _candidate_gets(self):
        return [(query, version)
                for method, path, query, version in self.placement_requests
                if method == 'GET' and path == '/allocation_candidates']

    def test_fits_and_does_not_fit(self):
        memory = 4096
        small = self._flavor('small', memory)
        # No host has the trait (within quota, unlike a too large flavor).
        nowhere = self._flavor(
            'nowhere', memory,
            extra_specs={'trait:CUSTOM_NOWHERE': 'required'})
        # Larger than any host (quota lets it be created and buried).
        self.flags(ram=-1, group='quota')
        huge = self._flavor('huge', 10 ** 8)
        fits = self._create_buried_server(flavorRef=small)
        never = self._create_buried_server(flavorRef=nowhere)
        too_large = self._create_buried_server(flavorRef=huge)
        for host in ('host1', 'host2'):
            self._start_compute(host)
        # The scheduler's own queries, when it buried them.
        del self.placement_requests[:]
        per_host = self._memory_per_host() // memory
        admin = nova_context.get_admin_context()
        fits_shape = self._shape(fits['id'])
        never_shape = self._shape(never['id'])
        self.assertEqual(1, len(fits_shape))
        self.assertNotEqual(objects.Cell0WaitShape.key_of(fits_shape),
                            objects.Cell0WaitShape.key_of(never_shape))
        # Computing shapes asks placement nothing.
        self.assertEqual([], self._candidate_gets())

        found = nova_placement.candidates(admin, fits_shape, 5)
        self.assertEqual(nova_placement.Candidates(True, 2 * per_host, ''),
                         found)
        self.assertEqual(
            [(fits_shape[0] + '&limit=5', 'placement 1.36')],
            self._candidate_gets())

        # limit samples the hosts: room is that of the hosts answered.
        del self.placement_requests[:]
        found = nova_placement.candidates(admin, fits_shape, 1)
        self.assertEqual(nova_placement.Candidates(True, per_host, ''),
                         found)
        self.assertEqual(1, len(self._candidate_gets()))

        del self.placement_requests[:]
        found = nova_placement.candidates(admin, never_shape, 3)
        self.assertEqual(nova_placement.Candidates(
            False, 0, 'placement has no candidate for VCPU=1,MEMORY_MB=4096,'
            'DISK_GB=1 with CUSTOM_NOWHERE (placement: No such trait(s): '
            'CUSTOM_NOWHERE.)'), found)
        self.assertEqual([(never_shape[0] + '&limit=3', 'placement 1.36')],
                         self._candidate_gets())

        del self.placement_requests[:]
        too_large_shape = self._shape(too_large['id'])
        found = nova_placement.candidates(admin, too_large_shape, 3)
        self.assertEqual(nova_placement.Candidates(
            False, 0, 'placement has no candidate for VCPU=1,'
            'MEMORY_MB=100000000,DISK_GB=1'), found)
        self.assertEqual(
            [(too_large_shape[0] + '&limit=3', 'placement 1.36')],
            self._candidate_gets())

    def test_dedicated_cpus_fall_back_to_vcpu(self):
        # The fake computes report no PCPU: the PCPU query has no
        # candidate, the VCPU fallback query has, as for the scheduler.
        pinned = self._flavor('pinned', 1024,
                              extra_specs={'hw:cpu_policy': 'dedicated'})
        server = self._create_buried_server(flavorRef=pinned)
        self._start_compute('host1')
        del self.placement_requests[:]
        shape = self._shape(server['id'])
        self.assertEqual(2, len(shape))
        self.assertEqual(['DISK_GB:1,MEMORY_MB:1024,PCPU:1',
                          'DISK_GB:1,MEMORY_MB:1024,VCPU:1'],
                         [dict(parse.parse_qsl(query))['resources']
                          for query in shape])
        found = nova_placement.candidates(
            nova_context.get_admin_context(), shape, 2)
        self.assertTrue(found.fits)
        self.assertEqual([(query + '&limit=2', 'placement 1.36')
                          for query in shape], self._candidate_gets())

    def test_requested_host_is_in_tree(self):
        # A create that names its host (2.74) is asked on that host only:
        # resources_from_request_spec finds its compute node through our
        # stand-in for the scheduler's HostManager.
        for host in ('host1', 'host2'):
            self._start_compute(host)
            self._set_capacity(False, host)
        small = self._flavor('small', 4096)
        server = self._create_buried_server(
            api=self.admin_api, flavorRef=small, host='host2')
        for host in ('host1', 'host2'):
            self._set_capacity(True, host)
        del self.placement_requests[:]
        node = nova_objects.ComputeNode.get_by_nodename(
            nova_context.get_admin_context(), 'host2')
        (query,) = self._shape(server['id'], requested_host='host2')
        self.assertIn(('in_tree', node.uuid), parse.parse_qsl(query))
        found = nova_placement.candidates(
            nova_context.get_admin_context(), (query,), 5)
        self.assertEqual(nova_placement.Candidates(
            True, self._memory_per_host() // 4096, ''), found)
        self.assertEqual(1, len(self._candidate_gets()))

    def test_unknown_requested_host_has_no_candidate(self):
        self._start_compute('host1')
        self._set_capacity(False, 'host1')
        server = self._create_buried_server(
            api=self.admin_api, flavorRef=self._flavor('small', 4096),
            host='host1')
        self._set_capacity(True, 'host1')
        refused = self.assertRaises(
            exception.NoCandidatePossible, self._shape, server['id'],
            requested_host='gone')
        self.assertIn('No such host - host: gone', refused.reason)

    def test_tenant_aggregate_is_member_of(self):
        # The scheduler's require_tenant_aggregate request filter, on the
        # API database's aggregates: the server's project may only use
        # host1, whose placement aggregate is asked for.
        self.flags(limit_tenants_to_placement_aggregate=True,
                   group='scheduler')
        small = self._flavor('small', 4096)
        server = self._create_buried_server(flavorRef=small)
        for host in ('host1', 'host2'):
            self._start_compute(host)
        aggregate = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'tenant'}})
        self.admin_api.add_host_to_aggregate(aggregate['id'], 'host1')
        self.admin_api.post_aggregate_action(aggregate['id'], {
            'set_metadata': {'metadata': {
                'filter_tenant_id': server['tenant_id']}}})
        del self.placement_requests[:]
        (query,) = self._shape(server['id'])
        self.assertIn(('member_of', 'in:' + aggregate['uuid']),
                      parse.parse_qsl(query))
        found = nova_placement.candidates(
            nova_context.get_admin_context(), (query,), 5)
        self.assertEqual(nova_placement.Candidates(
            True, self._memory_per_host() // 4096, ''), found)
        self.assertEqual(1, len(self._candidate_gets()))
