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
ListOfStringsField = fields.ListOfStringsField
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


class MoveStatus(fields.Enum):
    IN_PROGRESS = 'in_progress'
    #: Handed to Nova's conductor: it schedules and builds from here.
    DONE = 'done'
    ROLLED_BACK = 'rolled_back'

    ALL = (IN_PROGRESS, DONE, ROLLED_BACK)

    def __init__(self):
        super().__init__(valid_values=MoveStatus.ALL)


class MoveStatusField(fields.BaseEnumField):
    AUTO_TYPE = MoveStatus()


class MoveStep(fields.Enum):
    """The steps of a move out of cell0, in the order they happen."""

    CLAIMED = 'claimed'
    BUILD_REQUEST_WRITTEN = 'build_request_written'
    CELL0_ROWS_REMOVED = 'cell0_rows_removed'
    CASTING = 'casting'
    CAST_SENT = 'cast_sent'

    ALL = (CLAIMED, BUILD_REQUEST_WRITTEN, CELL0_ROWS_REMOVED, CASTING,
           CAST_SENT)

    def __init__(self):
        super().__init__(valid_values=MoveStep.ALL)


class MoveStepField(fields.BaseEnumField):
    AUTO_TYPE = MoveStep()


class AnnouncementState(fields.Enum):
    """Where the relay's announcement of a burial is."""

    #: A relay holds the lease and announces it.
    ANNOUNCING = 'announcing'
    #: Every event of the announcement was published.
    ANNOUNCED = 'announced'

    ALL = (ANNOUNCING, ANNOUNCED)

    def __init__(self):
        super().__init__(valid_values=AnnouncementState.ALL)


class AnnouncementStateField(fields.BaseEnumField):
    AUTO_TYPE = AnnouncementState()


class WaitState(fields.Enum):
    """Where a buried server's wait for room is."""

    #: Waiting for capacity, or for its next attempt after a back-off.
    WAITING = 'waiting'
    #: A rebuild of the pending service is unsettled.
    DISPATCHED = 'dispatched'
    #: Deadline passed, cancelled, or refused: kept for the API.
    ENDED = 'ended'

    ALL = (WAITING, DISPATCHED, ENDED)

    def __init__(self):
        super().__init__(valid_values=WaitState.ALL)


class WaitStateField(fields.BaseEnumField):
    AUTO_TYPE = WaitState()


class WaitSource(fields.Enum):
    """How a server opted in to wait."""

    #: The ``cell0_rebuild:wait`` metadata key of its create.
    METADATA = 'metadata'
    #: ``PUT .../wait`` while buried.
    API = 'api'

    ALL = (METADATA, API)

    def __init__(self):
        super().__init__(valid_values=WaitSource.ALL)


class WaitSourceField(fields.BaseEnumField):
    AUTO_TYPE = WaitSource()


class WaitReason(fields.Enum):
    """Why a server is not rebuilt yet, or why its wait ended."""

    NO_CANDIDATE = 'no_candidate'
    SCHEDULER_REFUSED = 'scheduler_refused'
    GATE_REFUSED = 'gate_refused'
    IN_PROGRESS = 'in_progress'
    MALFORMED = 'malformed'
    POLICY = 'policy'
    DISABLED = 'disabled'
    PROJECT_NOT_ENABLED = 'project_not_enabled'
    DEADLINE = 'deadline'
    CANCELLED = 'cancelled'
    #: The deadline asked was later than ``max_wait_seconds`` allows.
    CLAMPED = 'clamped'
    #: The server was deleted while it waited.
    DELETED = 'deleted'

    ALL = (NO_CANDIDATE, SCHEDULER_REFUSED, GATE_REFUSED, IN_PROGRESS,
           MALFORMED, POLICY, DISABLED, PROJECT_NOT_ENABLED, DEADLINE,
           CANCELLED, CLAMPED, DELETED)

    def __init__(self):
        super().__init__(valid_values=WaitReason.ALL)


class WaitReasonField(fields.BaseEnumField):
    AUTO_TYPE = WaitReason()
