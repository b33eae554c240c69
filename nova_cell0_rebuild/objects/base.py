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

"""Base classes of the plugin's versioned objects.

oslo.versionedobjects keeps one registry of classes for the whole process,
shared with Nova's objects: our objects therefore carry their own namespace
and never reuse a Nova class name.
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields as ovo_fields

OBJ_PROJECT_NAMESPACE = 'nova_cell0_rebuild'


class Cell0RebuildObjectRegistry(ovo_base.VersionedObjectRegistry):
    """Registry publishing classes as ``nova_cell0_rebuild.objects.X``."""

    def registration_hook(self, cls, index):
        from nova_cell0_rebuild import objects
        version = tuple(int(part) for part in cls.VERSION.split('.'))
        current = getattr(objects, cls.obj_name(), None)
        if current is None or version >= tuple(
                int(part) for part in current.VERSION.split('.')):
            setattr(objects, cls.obj_name(), cls)


class Cell0RebuildObject(ovo_base.VersionedObject):
    """Base of every versioned object of the plugin."""

    OBJ_PROJECT_NAMESPACE = OBJ_PROJECT_NAMESPACE
    OBJ_SERIAL_NAMESPACE = 'nova_cell0_rebuild_object'


#: Fields of every object backed by a row with timestamps.
TIMESTAMP_FIELDS = {
    'created_at': ovo_fields.DateTimeField(nullable=True),
    'updated_at': ovo_fields.DateTimeField(nullable=True),
}
