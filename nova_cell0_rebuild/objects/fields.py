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

"""Field types of the plugin's versioned objects."""

from oslo_serialization import jsonutils
from oslo_versionedobjects import fields

# Re-exported so that object modules import their fields from one place.
BooleanField = fields.BooleanField
DateTimeField = fields.DateTimeField
IntegerField = fields.IntegerField
NonNegativeIntegerField = fields.NonNegativeIntegerField
StringField = fields.StringField
UUIDField = fields.UUIDField


class JSONValue(fields.FieldType):
    """Any value that survives a JSON round trip unchanged."""

    def coerce(self, obj, attr, value):
        try:
            return jsonutils.loads(jsonutils.dumps(value))
        except (TypeError, ValueError) as exc:
            raise ValueError('%s is not JSON serializable: %s' % (attr, exc))


class JSONField(fields.AutoTypedField):
    AUTO_TYPE = JSONValue()


class CreateRecordStatus(fields.Enum):
    #: Written before Nova handled the create; Nova has not answered yet.
    PENDING = 'pending'
    #: Nova accepted the create (202).
    ACCEPTED = 'accepted'

    ALL = (PENDING, ACCEPTED)

    def __init__(self):
        super().__init__(valid_values=CreateRecordStatus.ALL)


class CreateRecordStatusField(fields.BaseEnumField):
    AUTO_TYPE = CreateRecordStatus()
