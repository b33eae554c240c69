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

"""The object-hash test: a field change needs a version bump."""

import hashlib
import json

from nova import objects as nova_objects
from oslo_versionedobjects import fixture

from nova_cell0_rebuild.notifications import payloads  # noqa: F401
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import base as obj_base
from nova_cell0_rebuild.tests.unit import base

# When a test below fails, the object changed: bump its VERSION, add a line
# to its version history and to obj_make_compatible, then update the hash.
object_data = {
    'Cell0RebuildErrorPayload': '1.0-da27aae7eb1df366b3c920287ac1a399',
    'Cell0RebuildFaultPayload': '1.0-f588e6166977aa92e065a2ff1b94d24c',
    'Cell0RebuildPayload': '1.0-772120c6fd78199d0a3564338263384a',
    'Cell0RebuildRefusedPayload': '1.1-6abacafe05a59ff1de95bf30e71bd027',
    'Cell0RebuildWaitAttemptPayload': '1.0-4b4500fb00073ee93089975fba4284ba',
    'Cell0RebuildWaitEndPayload': '1.0-5df0eed21ea12ec8bfce3fbfc0828dbf',
    'Cell0RebuildWaitPayload': '1.0-d1ef62b315ee15ff59b25e51e017e996',
    'Cell0Wait': '1.0-63280b22a01cf4b81120aae1b6528fa2',
    'Cell0WaitShape': '1.0-f5d54a4d8c815b01cf5d6d161ad32204',
    'CreateRecord': '1.3-4e356b80a394eae3c618025943541140',
    'MoveJournal': '1.1-3a373d608ebe22d9d4a0f6cc6e3099f1',
    'PendingEpoch': '1.0-b723cb4654ed4882cdc9f88c269fe216',
    'RelayAnnouncement': '1.0-73f946cbea5d1a2d43d72dfc9489d1cd',
    'ServerHistory': '1.0-0942d722e7f704f18fee87dc8b283fb6',
}

# Objects that hold other objects, and the versions they hold.
object_relationships = {
    'Cell0RebuildErrorPayload': {'Cell0RebuildFaultPayload': '1.0'},
}


def _our_classes():
    registry = obj_base.Cell0RebuildObjectRegistry.obj_classes()
    return {name: classes for name, classes in registry.items()
            if name in object_data or
            classes[0].OBJ_PROJECT_NAMESPACE ==
            obj_base.OBJ_PROJECT_NAMESPACE}


class TestObjectVersions(base.TestCase):

    def setUp(self):
        super().setUp()
        self.checker = fixture.ObjectVersionChecker(_our_classes())

    def test_versions(self):
        expected, actual = self.checker.test_hashes(object_data)
        self.assertEqual(expected, actual,
                         'Some objects changed: bump their version')

    def test_every_object_is_in_the_list(self):
        self.assertEqual(sorted(object_data), sorted(_our_classes()))

    def test_compatibility_routines(self):
        self.checker.test_compatibility_routines()

    def test_relationships(self):
        self.checker.test_relationships(object_relationships)

    def test_no_nova_class_name_is_reused(self):
        # oslo.versionedobjects keeps one registry per process, shared with
        # Nova: a name of ours must never also name a Nova object.
        nova_objects.register_all()
        registry = obj_base.Cell0RebuildObjectRegistry.obj_classes()
        for name in object_data:
            self.assertEqual(
                {obj_base.OBJ_PROJECT_NAMESPACE},
                {cls.OBJ_PROJECT_NAMESPACE for cls in registry[name]})


class TestCell0WaitShapeKey(base.TestCase):
    """The one key of a request shape (the dispatcher stores and looks
    shapes up by it).
    """

    def test_sha256_of_the_sorted_queries(self):
        queries = ('b=1', 'a=2')
        self.assertEqual(
            hashlib.sha256(json.dumps(['a=2', 'b=1']).encode()).hexdigest(),
            objects.Cell0WaitShape.key_of(queries))
        self.assertEqual(objects.Cell0WaitShape.key_of(queries),
                         objects.Cell0WaitShape.key_of(
                             list(reversed(queries))))
