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

"""The move names every field of the Nova objects it hands to Nova.

A Nova upgrade that adds a field to Instance, RequestSpec, BuildRequest or
BlockDeviceMapping fails here until someone decides whether a rebuild from
cell0 copies it, sets it afresh, or drops it (with a reason): no field is
lost or copied blindly.
"""

from nova import objects as nova_objects
from oslotest import base

from nova_cell0_rebuild.adapters import nova_move_fields as move_fields


class FieldsAreNamedTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        nova_objects.register_all()

    def _assert_partition(self, fields, *parts):
        named = set()
        for part in parts:
            self.assertEqual(set(), named & set(part),
                             'a field is named twice')
            named |= set(part)
        self.assertEqual(
            set(), set(fields) - named,
            'fields of the installed Nova the move does not name')
        self.assertEqual(
            set(), named - set(fields),
            'fields the move names that the installed Nova does not have')

    def test_instance(self):
        self._assert_partition(
            nova_objects.Instance.fields, move_fields.INSTANCE_COPIED,
            move_fields.INSTANCE_REBUILT, move_fields.INSTANCE_DROPPED)

    def test_request_spec(self):
        self._assert_partition(
            nova_objects.RequestSpec.fields, move_fields.REQUEST_SPEC_KEPT,
            move_fields.REQUEST_SPEC_RESET)

    def test_build_request(self):
        self._assert_partition(
            nova_objects.BuildRequest.fields, move_fields.BUILD_REQUEST_SET,
            move_fields.BUILD_REQUEST_DATABASE)

    def test_block_device_mapping(self):
        # Every field but the dropped ones is copied.
        self._assert_partition(
            nova_objects.BlockDeviceMapping.fields, move_fields.BDM_DROPPED,
            set(nova_objects.BlockDeviceMapping.fields) -
            set(move_fields.BDM_DROPPED))

    def test_every_field_dropped_or_rebuilt_says_why(self):
        for table in (move_fields.INSTANCE_REBUILT,
                      move_fields.INSTANCE_DROPPED, move_fields.BDM_DROPPED,
                      move_fields.REQUEST_SPEC_RESET):
            for field, reason in table.items():
                self.assertTrue(reason.strip(), field)
