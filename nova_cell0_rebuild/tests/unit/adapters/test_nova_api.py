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

"""Microversions are read exactly as Nova reads them."""

import fixtures
import nova.conf
from nova import policy as nova_policy
from oslotest import base
import webob

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild import policies
from nova_cell0_rebuild.policies import rebuild as rebuild_policies
from nova_cell0_rebuild.tests import microversions as mv


def _request(**headers):
    return webob.Request.blank('/servers', headers=headers)


class TestRequestedVersion(base.BaseTestCase):

    def test_no_header_is_the_default(self):
        self.assertEqual('2.1',
                         nova_api.requested_version(_request()).get_string())

    def test_latest_is_novas_maximum(self):
        version = nova_api.requested_version(
            _request(**{'OpenStack-API-Version': 'compute latest'}))
        self.assertEqual(nova_api.max_version(), version)
        self.assertEqual(mv.NOVA_MAX, version.get_string())

    def test_both_headers(self):
        self.assertEqual('2.57', nova_api.requested_version(_request(
            **{'OpenStack-API-Version': 'compute 2.57'})).get_string())
        self.assertEqual('2.65', nova_api.requested_version(_request(
            **{'X-OpenStack-Nova-API-Version': '2.65'})).get_string())

    def test_versions_nova_rejects_are_none(self):
        for value in ('compute 2.105', 'compute 1.9', 'compute two',
                      'compute 2.1.1'):
            self.assertIsNone(nova_api.requested_version(
                _request(**{'OpenStack-API-Version': value})), value)

    def test_legacy_v2(self):
        self.assertEqual('2.0', nova_api.requested_version(
            _request(), legacy_v2=True).get_string())

    def test_parse(self):
        self.assertEqual(nova_api.APIVersion('2.65'), nova_api.parse('2.65'))
        self.assertRaises(ValueError, nova_api.parse, 'x')


class TestEnforcer(base.BaseTestCase):
    """Our rules are registered on Nova's enforcer once, not per request."""

    def setUp(self):
        super().setUp()
        nova.conf.CONF([], project='nova')
        self.addCleanup(nova_policy.reset)
        nova_policy.reset()
        self.listed = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.policies.list_rules',
            side_effect=policies.list_rules)).mock

    def test_rules_are_registered_once_per_enforcer(self):
        first = nova_api._enforcer()
        self.assertIs(first, nova_api._enforcer())
        self.assertEqual(1, self.listed.call_count)
        self.assertIn(rebuild_policies.REBUILD_FROM_CELL0,
                      first.registered_rules)
        # A new enforcer (policy reset) gets them again.
        nova_policy.reset()
        second = nova_api._enforcer()
        self.assertIsNot(first, second)
        self.assertEqual(2, self.listed.call_count)
        self.assertIn(rebuild_policies.REBUILD_FROM_CELL0,
                      second.registered_rules)
