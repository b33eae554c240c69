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

from oslotest import base
import webob

from nova_cell0_rebuild.adapters import nova_api


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
        self.assertEqual('2.104', version.get_string())

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
