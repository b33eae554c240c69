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

"""The policy target of a server known by its mapping."""

from nova import context as nova_context
from nova import objects as nova_objects

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.tests.unit import base

SERVER = '6a0f1d52-7d4e-4a28-9b0e-1f9d3c2b7a10'


class PolicyTargetTest(base.TestCase):

    def setUp(self):
        super().setUp()
        nova_objects.register_all()
        self.context = nova_context.RequestContext('user', 'project',
                                                   is_admin=False)

    def test_the_mappings_project_and_user(self):
        mapping = nova_objects.InstanceMapping(
            instance_uuid=SERVER, project_id='project', user_id='owner')
        self.assertEqual({'project_id': 'project', 'user_id': 'owner'},
                         nova_servers.policy_target(self.context, mapping))

    def test_a_mapping_without_a_user(self):
        # Older mappings, and those of Nova's API sample tests, have none:
        # reading it would raise (a 500 for every rebuild below the
        # threshold).
        mapping = nova_objects.InstanceMapping(
            instance_uuid=SERVER, project_id='project')
        self.assertEqual({'project_id': 'project', 'user_id': None},
                         nova_servers.policy_target(self.context, mapping))
