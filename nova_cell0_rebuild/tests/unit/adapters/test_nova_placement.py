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

"""A buried server's request shape is the scheduler's query, and placement's
answer is read as the dispatcher needs it.

The shapes are Nova's own ResourceRequest output for RequestSpecs as the
move completes them; the request filters run as the scheduler runs them,
with their database reads replaced (no Nova database here).
"""

import json
from unittest import mock
from urllib import parse

import fixtures
from keystoneauth1 import exceptions as ks_exc
import nova.conf
from nova import context as nova_context
from nova import objects as nova_objects
from oslo_config import fixture as config_fixture
from oslo_utils import uuidutils

from nova_cell0_rebuild.adapters import nova_placement
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.tests.unit import base

NOVA_CONF = nova.conf.CONF


def pairs(query):
    return parse.parse_qsl(query)


def values(query, key):
    """The comma-separated values of a parameter, all its occurrences."""
    return sorted(item for name, value in pairs(query) if name == key
                  for item in value.split(','))


class ShapeTest(base.TestCase):

    def setUp(self):
        super().setUp()
        nova_objects.register_all()
        self.nova_conf = self.useFixture(config_fixture.Config(NOVA_CONF))
        self.context = nova_context.RequestContext('u', 'p', is_admin=True)
        # owner_nova_filter (Nova 34) reads the minimum compute version of
        # every cell: all computes are new.
        self.useFixture(fixtures.MockPatch(
            'nova.objects.service.get_minimum_version_all_cells',
            return_value=10 ** 6))

    def _spec(self, extra_specs=None, image_properties=None, groups=(),
              **fields):
        flavor = nova_objects.Flavor(
            id=1, flavorid='1', name='f', vcpus=8, memory_mb=16384,
            root_gb=10, ephemeral_gb=0, swap=0,
            extra_specs=extra_specs or {})
        image = nova_objects.ImageMeta.from_dict(
            {'id': uuidutils.generate_uuid(),
             'properties': image_properties or {}})
        spec = nova_objects.RequestSpec(
            instance_uuid=uuidutils.generate_uuid(), project_id='p',
            user_id='u', flavor=flavor, image=image, num_instances=1,
            is_bfv=False, scheduler_hints={}, force_hosts=None,
            force_nodes=None, requested_destination=None,
            requested_networks=nova_objects.NetworkRequestList(objects=[]),
            requested_resources=list(groups),
            request_level_params=nova_objects.RequestLevelParams(),
            pci_requests=nova_objects.InstancePCIRequests(requests=[]),
            availability_zone=None, **fields)
        return spec

    def test_plain_flavor(self):
        spec = self._spec()
        shape = nova_placement.request_shape(self.context, spec)
        self.assertEqual(1, len(shape))
        query = dict(pairs(shape[0]))
        self.assertEqual('DISK_GB:10,MEMORY_MB:16384,VCPU:8',
                         query['resources'])
        self.assertNotIn('limit', query)
        self.assertNotIn('required', query)
        # compute_status_filter: no disabled compute.
        self.assertIn('!COMPUTE_STATUS_DISABLED',
                      values(shape[0], 'root_required'))
        # The copy was processed, not the caller's spec.
        self.assertEqual(set(), spec.root_required)

    def test_resources_and_traits_of_the_flavor(self):
        spec = self._spec(extra_specs={
            'resources:VCPU': '4',
            'trait:HW_CPU_X86_AVX2': 'required',
            'trait:CUSTOM_SLOW': 'forbidden',
            'resources1:CUSTOM_FPGA': '1',
            'trait1:CUSTOM_FPGA_XILINX': 'required',
            'resources2:CUSTOM_FPGA': '1',
            'group_policy': 'isolate'})
        shape = nova_placement.request_shape(self.context, spec)
        query = pairs(shape[0])
        self.assertIn(('resources', 'DISK_GB:10,MEMORY_MB:16384,VCPU:4'),
                      query)
        self.assertIn(('resources1', 'CUSTOM_FPGA:1'), query)
        self.assertIn(('resources2', 'CUSTOM_FPGA:1'), query)
        self.assertIn(('required1', 'CUSTOM_FPGA_XILINX'), query)
        self.assertIn(('group_policy', 'isolate'), query)
        self.assertEqual(['!CUSTOM_SLOW', 'HW_CPU_X86_AVX2'],
                         values(shape[0], 'required'))
        self.assertEqual(
            'placement has no candidate for VCPU=4,MEMORY_MB=16384,'
            'DISK_GB=10 with HW_CPU_X86_AVX2',
            nova_placement.summary(shape[0]))

    def test_image_traits(self):
        # As Glance shows an image property trait:HW_CPU_X86_SGX=required.
        spec = self._spec(image_properties={
            'trait:HW_CPU_X86_SGX': 'required'})
        shape = nova_placement.request_shape(self.context, spec)
        self.assertEqual(['HW_CPU_X86_SGX'], values(shape[0], 'required'))
        self.assertIn('with HW_CPU_X86_SGX', nova_placement.summary(shape[0]))

    def _port_group(self, kbps):
        # As neutron.API.create_resource_requests makes it for a port with
        # a QoS minimum bandwidth rule: the port's uuid is the suffix.
        return nova_objects.RequestGroup(
            requester_id=uuidutils.generate_uuid(),
            resources={'NET_BW_EGR_KILOBIT_PER_SEC': kbps},
            required_traits={'CUSTOM_PHYSNET_NET1', 'CUSTOM_VNIC_TYPE_NORMAL'},
            use_same_provider=True)

    def test_port_resource_request_group(self):
        port = self._port_group(1000)
        spec = self._spec(groups=[port])
        query = pairs(nova_placement.request_shape(self.context, spec)[0])
        self.assertIn(('resources' + port.requester_id,
                       'NET_BW_EGR_KILOBIT_PER_SEC:1000'), query)
        self.assertIn(('required' + port.requester_id,
                       'CUSTOM_PHYSNET_NET1,CUSTOM_VNIC_TYPE_NORMAL'), query)
        self.assertNotIn('group_policy', dict(query))

    def test_two_port_groups_get_nova_default_group_policy(self):
        # Two suffixed groups, none from the flavor: Nova says 'none'.
        spec = self._spec(groups=[self._port_group(1000),
                                  self._port_group(2000)])
        query = pairs(nova_placement.request_shape(self.context, spec)[0])
        self.assertIn(('group_policy', 'none'), query)

    def test_accelerator_device_profile_group(self):
        group = nova_objects.RequestGroup(
            requester_id='device_profile_0',
            resources={'FPGA': 1}, required_traits={'CUSTOM_FPGA_INTEL'},
            use_same_provider=True)
        spec = self._spec(extra_specs={'accel:device_profile': 'dp1'},
                          groups=[group])
        query = pairs(nova_placement.request_shape(self.context, spec)[0])
        self.assertIn(('resourcesdevice_profile_0', 'FPGA:1'), query)
        self.assertIn(('requireddevice_profile_0', 'CUSTOM_FPGA_INTEL'),
                      query)
        # accelerators_filter: hosts of computes that support Cyborg.
        self.assertIn('COMPUTE_ACCELERATORS',
                      values(parse.urlencode(query), 'root_required'))

    def test_dedicated_cpus_query_pcpu_then_vcpu(self):
        spec = self._spec(extra_specs={'hw:cpu_policy': 'dedicated'})
        pinned, fallback = nova_placement.request_shape(self.context, spec)
        self.assertEqual('DISK_GB:10,MEMORY_MB:16384,PCPU:8',
                         dict(pairs(pinned))['resources'])
        self.assertEqual('DISK_GB:10,MEMORY_MB:16384,VCPU:8',
                         dict(pairs(fallback))['resources'])

    def test_dedicated_cpus_without_fallback(self):
        self.nova_conf.config(disable_fallback_pcpu_query=True,
                              group='workarounds')
        spec = self._spec(extra_specs={'hw:cpu_policy': 'dedicated'})
        shape = nova_placement.request_shape(self.context, spec)
        self.assertEqual(1, len(shape))
        self.assertEqual('DISK_GB:10,MEMORY_MB:16384,PCPU:8',
                         dict(pairs(shape[0]))['resources'])

    def _tenant_aggregates(self, aggregates):
        self.nova_conf.config(limit_tenants_to_placement_aggregate=True,
                              group='scheduler')
        return mock.patch('nova.objects.AggregateList.get_by_metadata',
                          return_value=aggregates)

    def test_tenant_aggregate_is_member_of(self):
        aggregate = nova_objects.Aggregate(
            uuid=uuidutils.generate_uuid(), metadata={'filter_tenant_id': 'p'})
        spec = self._spec()
        with self._tenant_aggregates([aggregate]):
            shape = nova_placement.request_shape(self.context, spec)
        self.assertIn(('member_of', 'in:' + aggregate.uuid),
                      pairs(shape[0]))
        self.assertIsNone(spec.requested_destination)

    def test_tenant_without_aggregate_has_no_candidate(self):
        self.nova_conf.config(placement_aggregate_required_for_tenants=True,
                              group='scheduler')
        with self._tenant_aggregates([]):
            refused = self.assertRaises(
                exception.NoCandidatePossible, nova_placement.request_shape,
                self.context, self._spec())
        self.assertIn('No hosts available for tenant', refused.reason)

    def test_unknown_requested_host_has_no_candidate(self):
        spec = self._spec()
        spec.force_hosts = ['nowhere']
        with mock.patch.object(
                nova_placement._ComputeNodes,
                'get_compute_nodes_by_host_or_node',
                return_value=nova_objects.ComputeNodeList()) as lookup:
            refused = self.assertRaises(
                exception.NoCandidatePossible, nova_placement.request_shape,
                self.context, spec)
        lookup.assert_called_once_with(self.context, 'nowhere', None,
                                       cell=None)
        self.assertIn('No such host', refused.reason)


def summaries(*providers):
    """provider_summaries of (uuid, root, {class: (capacity, used)})."""
    return {uuid: {'root_provider_uuid': root, 'resources': {
        name: {'capacity': capacity, 'used': used}
        for name, (capacity, used) in resources.items()}}
        for uuid, root, resources in providers}


def answer(candidate_providers, provider_summaries):
    return {'allocation_requests': [
        {'allocations': {uuid: {'resources': {}} for uuid in providers}}
        for providers in candidate_providers],
        'provider_summaries': provider_summaries}


class RoomTest(base.TestCase):

    AMOUNTS = {'VCPU': 4, 'MEMORY_MB': 4096}

    def test_min_over_classes_summed_over_roots(self):
        found = answer([['a'], ['b']], summaries(
            ('a', 'a', {'VCPU': (64, 8), 'MEMORY_MB': (16384, 4096)}),
            ('b', 'b', {'VCPU': (16, 0), 'MEMORY_MB': (65536, 0)})))
        # a: min(56 // 4, 12288 // 4096) = 3; b: min(4, 16) = 4.
        self.assertEqual(7, nova_placement.room(found, self.AMOUNTS))

    def test_each_root_counts_once(self):
        # Two candidates on one host (e.g. two NUMA or two PFs).
        found = answer([['a', 'a-pf1'], ['a', 'a-pf2']], summaries(
            ('a', 'a', {'VCPU': (8, 0), 'MEMORY_MB': (8192, 0)}),
            ('a-pf1', 'a', {'NET_BW_EGR_KILOBIT_PER_SEC': (10, 0)}),
            ('a-pf2', 'a', {'NET_BW_EGR_KILOBIT_PER_SEC': (10, 0)})))
        self.assertEqual(2, nova_placement.room(found, self.AMOUNTS))

    def test_nested_providers_of_a_root_add_up(self):
        found = answer([['numa0']], summaries(
            ('host', 'host', {'DISK_GB': (100, 0)}),
            ('numa0', 'host', {'VCPU': (8, 0), 'MEMORY_MB': (8192, 0)}),
            ('numa1', 'host', {'VCPU': (8, 0), 'MEMORY_MB': (8192, 0)})))
        self.assertEqual(4, nova_placement.room(found, self.AMOUNTS))

    def test_at_least_one_per_root(self):
        # Used beyond capacity (a lowered allocation ratio) yet a candidate.
        found = answer([['a']], summaries(
            ('a', 'a', {'VCPU': (8, 10), 'MEMORY_MB': (8192, 0)})))
        self.assertEqual(1, nova_placement.room(found, self.AMOUNTS))

    def test_no_unsuffixed_resources(self):
        found = answer([['a'], ['b']], summaries(
            ('a', 'a', {'CUSTOM_X': (8, 0)}),
            ('b', 'b', {'CUSTOM_X': (8, 0)})))
        self.assertEqual(2, nova_placement.room(found, {}))


class SummaryTest(base.TestCase):

    def test_resources_and_required_traits(self):
        self.assertEqual(
            'placement has no candidate for VCPU=8,MEMORY_MB=16384 with '
            'HW_CPU_X86_AVX2',
            nova_placement.summary(
                'required=HW_CPU_X86_AVX2%2C%21COMPUTE_STATUS_DISABLED&'
                'resources=MEMORY_MB%3A16384%2CVCPU%3A8&'
                'resources1=CUSTOM_FPGA%3A1'))

    def test_no_trait(self):
        self.assertEqual(
            'placement has no candidate for PCPU=2,MEMORY_MB=512,DISK_GB=1,'
            'CUSTOM_A=1,CUSTOM_B=3',
            nova_placement.summary(
                'resources=CUSTOM_B%3A3%2CCUSTOM_A%3A1%2CDISK_GB%3A1%2C'
                'MEMORY_MB%3A512%2CPCPU%3A2'))


class FakeResponse(object):

    def __init__(self, status_code, body):
        self.status_code = status_code
        self.body = body
        self.text = json.dumps(body)

    def json(self):
        return self.body


class CandidatesTest(base.TestCase):

    FITS = answer([['a']], summaries(
        ('a', 'a', {'VCPU': (16, 0), 'MEMORY_MB': (16384, 0)})))
    NONE = {'allocation_requests': [], 'provider_summaries': {}}
    PINNED = 'resources=MEMORY_MB%3A4096%2CPCPU%3A4'
    FALLBACK = 'resources=MEMORY_MB%3A4096%2CVCPU%3A4'

    def setUp(self):
        super().setUp()
        self.context = nova_context.RequestContext('u', 'p', is_admin=True)
        self.client = self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.report.report_client_singleton')
        ).mock.return_value

    def _answers(self, *bodies):
        self.client.get.side_effect = [FakeResponse(200, body)
                                       for body in bodies]

    def test_fits_at_the_first_query(self):
        self._answers(self.FITS)
        found = nova_placement.candidates(
            self.context, (self.FALLBACK, self.PINNED), 3)
        self.assertEqual(nova_placement.Candidates(True, 4, ''), found)
        self.client.get.assert_called_once_with(
            '/allocation_candidates?%s&limit=3' % self.FALLBACK,
            version='1.36', global_request_id=self.context.global_id)

    def test_fallback_asked_when_the_first_has_none(self):
        self._answers(self.NONE, self.FITS)
        found = nova_placement.candidates(
            self.context, (self.PINNED, self.FALLBACK), 1)
        self.assertTrue(found.fits)
        self.assertEqual(
            ['/allocation_candidates?%s&limit=1' % query
             for query in (self.PINNED, self.FALLBACK)],
            [call.args[0] for call in self.client.get.call_args_list])

    def test_no_candidate(self):
        self._answers(self.NONE, self.NONE)
        found = nova_placement.candidates(
            self.context, (self.PINNED, self.FALLBACK), 2)
        self.assertEqual(nova_placement.Candidates(
            False, 0, 'placement has no candidate for PCPU=4,MEMORY_MB=4096'),
            found)

    def test_placement_error_is_not_an_answer(self):
        self.client.get.return_value = FakeResponse(
            503, {'errors': [{'detail': 'down'}]})
        error = self.assertRaises(
            exception.PlacementUnavailable, nova_placement.candidates,
            self.context, (self.PINNED,), 1)
        self.assertIn('503', str(error))

    def test_refused_query_has_no_candidate(self):
        # Placement's 400 for a trait no provider ever reported; the
        # scheduler's get_allocation_candidates answers None: NoValidHost.
        self.client.get.return_value = FakeResponse(400, {'errors': [{
            'status': 400, 'detail': 'The server could not comply with the '
            'request since it is either malformed or otherwise incorrect.'
            '\n\n No such trait(s): CUSTOM_NOWHERE.  '}]})
        found = nova_placement.candidates(
            self.context, (self.PINNED, self.FALLBACK), 1)
        self.assertEqual(nova_placement.Candidates(
            False, 0, 'placement has no candidate for PCPU=4,MEMORY_MB=4096 '
            '(placement: No such trait(s): CUSTOM_NOWHERE.)'), found)
        self.assertEqual(2, self.client.get.call_count)

    def test_fallback_fits_after_a_refused_query(self):
        self.client.get.side_effect = [
            FakeResponse(400, {'errors': [{'detail': 'No such trait(s): X'}]}),
            FakeResponse(200, self.FITS)]
        found = nova_placement.candidates(
            self.context, (self.PINNED, self.FALLBACK), 1)
        self.assertEqual(nova_placement.Candidates(True, 4, ''), found)

    def test_credentials_refused_is_not_an_answer(self):
        self.client.get.return_value = FakeResponse(
            401, {'errors': [{'detail': 'no token'}]})
        self.assertRaises(exception.PlacementUnavailable,
                          nova_placement.candidates,
                          self.context, (self.PINNED,), 1)

    def test_placement_unreachable(self):
        self.client.get.side_effect = ks_exc.ConnectFailure('refused')
        self.assertRaises(exception.PlacementUnavailable,
                          nova_placement.candidates,
                          self.context, (self.PINNED,), 1)

    def test_unexpected_body(self):
        self.client.get.return_value = FakeResponse(200, {'x': 1})
        self.assertRaises(exception.PlacementUnavailable,
                          nova_placement.candidates,
                          self.context, (self.PINNED,), 1)

    def test_limit_at_least_one(self):
        self.assertRaises(ValueError, nova_placement.candidates,
                          self.context, (self.PINNED,), 0)
        self.client.get.assert_not_called()
