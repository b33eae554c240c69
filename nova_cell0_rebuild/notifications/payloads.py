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

"""Payloads of the ``cell0_rebuild.rebuild.*`` versioned notifications.

They are serialized like Nova's own payloads (``nova_object.name``,
``nova_object.data``, ...), so a consumer of Nova's versioned notifications
reads them the same way; ``nova_object.namespace`` is ours,
``nova_cell0_rebuild``.
"""

from oslo_utils import versionutils
from oslo_versionedobjects import fields as ovo_fields

from nova_cell0_rebuild.objects import base
from nova_cell0_rebuild.objects import fields


class Cell0RebuildNotificationObject(base.Cell0RebuildObject):
    """Base of the payloads: our namespace, Nova's wire format."""

    OBJ_SERIAL_NAMESPACE = 'nova_object'

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Built on the fly, every field looks changed: that says nothing.
        self.obj_reset_changes(recursive=False)


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildPayload(Cell0RebuildNotificationObject):
    """A rebuild from cell0: the server, the request and what it uses."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(),
        # Of the rebuild request.
        'request_id': fields.StringField(nullable=True),
        'reservation_id': fields.StringField(nullable=True),
        # The image the server is rebuilt with.
        'image_uuid': fields.StringField(nullable=True),
        # The RequestSpec of the server's create, which the rebuild reuses.
        'request_spec_id': fields.IntegerField(nullable=True),
    }

    @classmethod
    def from_server(cls, context, server, image_uuid, request_spec_id,
                    **extra):
        """Build the payload for a gates' Cell0Server."""
        instance = server.instance
        return cls(instance_uuid=instance.uuid,
                   project_id=instance.project_id,
                   user_id=instance.user_id,
                   request_id=context.request_id,
                   reservation_id=instance.reservation_id,
                   image_uuid=image_uuid,
                   request_spec_id=request_spec_id, **extra)


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildFaultPayload(Cell0RebuildNotificationObject):
    """What made a rebuild from cell0 fail."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        # The exception's class name, e.g. MoveInProgress.
        'exception': fields.StringField(),
        'exception_message': fields.StringField(),
    }

    @classmethod
    def from_exception(cls, exc):
        return cls(exception=type(exc).__name__,
                   exception_message=str(exc) or type(exc).__name__)


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildErrorPayload(Cell0RebuildPayload):
    """A rebuild from cell0 that failed after it started."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(Cell0RebuildPayload.fields, **{
        'fault': ovo_fields.ObjectField('Cell0RebuildFaultPayload'),
    })


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildRefusedPayload(Cell0RebuildPayload):
    """A rebuild from cell0 that was refused: by a gate, or lost a race."""

    # Version 1.0: Initial version
    # Version 1.1: gate is nullable: None when another rebuild of the
    #              server was in progress
    VERSION = '1.1'

    fields = dict(Cell0RebuildPayload.fields, **{
        # The gate's name in [cell0_rebuild] enabled_gates, or None when
        # the rebuild was refused because another one was in progress.
        'gate': fields.StringField(nullable=True),
        # The fault message the user was answered with.
        'reason': fields.StringField(),
        # The HTTP status the user was answered with.
        'code': fields.IntegerField(),
    })

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target_version = versionutils.convert_version_to_tuple(
            target_version)
        if target_version < (1, 1) and primitive.get('gate') is None:
            # 1.0 always named a gate: no gate is no name.
            primitive['gate'] = ''


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildWaitPayload(Cell0RebuildNotificationObject):
    """A buried server's wait for room (issue 27): ``wait.start``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        # Who opted in.
        'user_id': fields.StringField(),
        # metadata (the create's key) or api (PUT .../wait).
        'source': fields.WaitSourceField(),
        'queued_at': fields.DateTimeField(),
        'deadline': fields.DateTimeField(),
        'attempts': fields.NonNegativeIntegerField(),
    }

    @classmethod
    def from_wait(cls, wait, **extra):
        """Build the payload for a Cell0Wait."""
        return cls(instance_uuid=wait.instance_uuid,
                   project_id=wait.project_id, user_id=wait.user_id,
                   source=wait.source, queued_at=wait.queued_at,
                   deadline=wait.deadline, attempts=wait.attempts, **extra)


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildWaitAttemptPayload(Cell0RebuildWaitPayload):
    """One automatic rebuild of a waiting server: ``wait.attempt``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(Cell0RebuildWaitPayload.fields, **{
        # The request id of the rebuild (req-<uuid>), as in the server's
        # instance actions.
        'request_id': fields.StringField(),
        'shape_key': fields.StringField(nullable=True),
        # dispatched: handed to Nova's conductor; refused: a gate or a
        # race refused it before.
        'outcome': fields.StringField(),
        # For refused: the gate's name (None when no gate refused), the
        # message and HTTP status a user would have been answered.
        'gate': fields.StringField(nullable=True),
        'reason': fields.StringField(nullable=True),
        'code': fields.IntegerField(nullable=True),
    })


@base.Cell0RebuildObjectRegistry.register
class Cell0RebuildWaitEndPayload(Cell0RebuildWaitPayload):
    """A wait that ended: ``wait.end``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = dict(Cell0RebuildWaitPayload.fields, **{
        # rebuilt, deadline, cancelled, deleted or project_not_enabled.
        'reason': fields.StringField(),
    })
