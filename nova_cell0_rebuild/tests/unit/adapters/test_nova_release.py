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

"""What the installed Nova offers, as nova_release finds it."""

from nova.api.openstack import api_version_request
from nova.api.openstack.compute.schemas import servers as servers_schema
from nova.api import validation
import testtools

from nova_cell0_rebuild.adapters import nova_release
from nova_cell0_rebuild.tests import microversions as mv


class _Request(object):
    def __init__(self, version):
        self.api_version_request = api_version_request.APIVersionRequest(
            version)


class RebuildSchemasTest(testtools.TestCase):

    def test_novas_rebuild_schema_for_each_version(self):
        schemas = nova_release.rebuild_request_schemas()
        for version, schema in (('2.1', servers_schema.rebuild),
                                ('2.56', servers_schema.rebuild_v254),
                                ('2.57', servers_schema.rebuild_v257),
                                ('2.63', servers_schema.rebuild_v263),
                                ('2.94', servers_schema.rebuild_v294),
                                (mv.NOVA_MAX, servers_schema.rebuild_v294)):
            self.assertIs(schema, schemas(_Request(version)), version)

    def test_schemas_are_read_from_decorators_without_a_table(self):
        # How Nova 31 and older keep them: only in the decorators.
        @validation.schema({'n': 1}, '2.1', '2.9')
        @validation.schema({'n': 2}, '2.10')
        def action(self, req, id, body):
            pass

        schemas = nova_release._DecoratorSchemas(action)
        self.assertEqual({'n': 1}, schemas(_Request('2.9')))
        self.assertEqual({'n': 2}, schemas(_Request('2.10')))
        self.assertEqual({'n': 2}, schemas(_Request(mv.NOVA_MAX)))
        self.assertIsNone(schemas(_Request('2.0')))

    def test_a_method_without_schemas_is_an_error(self):
        self.assertRaises(RuntimeError, nova_release._DecoratorSchemas,
                          lambda self, req, id, body: None)
