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

"""Sending ``cell0_rebuild.rebuild.<phase>`` for a rebuild from cell0.

A notification is only news: failing to send one is logged and never
changes the answer to the rebuild request, and a request waits for one at
most ``[cell0_rebuild] notification_timeout`` seconds (the transport tries
``notification_retries`` times again), however the broker fails.
"""

import contextlib

from oslo_config import cfg
from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.notifications import payloads
from nova_cell0_rebuild.notifications import sender

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

START = 'start'
END = 'end'
ERROR = 'error'
REFUSED = 'refused'
ABANDONED = 'abandoned'

EVENT_TYPE = 'cell0_rebuild.rebuild.%s'

# A refusal is an answer, not a failure: INFO, as start and end.
_PRIORITIES = {START: 'info', END: 'info', ERROR: 'error', REFUSED: 'info',
               ABANDONED: 'info'}

# notify_rebuild looks the RequestSpec id up itself unless given one.
_LOOK_UP = object()


def _payload(context, phase, server, image_uuid, request_spec_id, refusal,
             fault):
    if request_spec_id is _LOOK_UP:
        request_spec_id = nova_notifications.request_spec_id(
            context, server.uuid)
    args = (context, server, image_uuid, request_spec_id)
    if phase == REFUSED:
        # No gate when refused because another rebuild was in progress.
        return payloads.Cell0RebuildRefusedPayload.from_server(
            *args, gate=getattr(refusal, 'gate', None), reason=str(refusal),
            code=refusal.status)
    if phase == ERROR:
        return payloads.Cell0RebuildErrorPayload.from_server(
            *args, fault=payloads.Cell0RebuildFaultPayload.from_exception(
                fault))
    return payloads.Cell0RebuildPayload.from_server(*args)


def notify_rebuild(context, phase, server, image_uuid=None,
                   request_spec_id=_LOOK_UP, refusal=None, fault=None):
    """Send ``cell0_rebuild.rebuild.<phase>`` if Nova sends versioned ones.

    :param phase: START, END, ERROR, REFUSED or ABANDONED.
    :param server: the gates' Cell0Server.
    :param image_uuid: the image the server is rebuilt with.
    :param request_spec_id: the server's RequestSpec id; looked up when
        not given.
    :param refusal: the RequestRefused (a GateRefused names its gate), for
        REFUSED.
    :param fault: the exception, for ERROR.
    """
    if phase not in _PRIORITIES:
        raise ValueError('unknown notification phase %r' % phase)
    if not nova_notifications.versioned_enabled():
        return
    event_type = EVENT_TYPE % phase
    try:
        payload = _payload(context, phase, server, image_uuid,
                           request_spec_id, refusal, fault)
        payload.obj_reset_changes(recursive=True)
        primitive = payload.obj_to_primitive()
    except Exception:
        LOG.exception('Could not send the %s notification of the rebuild '
                      'of server %s from cell0', event_type, server.uuid)
        return
    options = CONF.cell0_rebuild

    def send():
        try:
            nova_notifications.send(context, _PRIORITIES[phase], event_type,
                                    primitive,
                                    retry=options.notification_retries)
        except Exception:
            LOG.exception('Could not send the %s notification of the '
                          'rebuild of server %s from cell0', event_type,
                          server.uuid)
    sender.SENDER.submit(send, options.notification_timeout,
                         '%s (server %s)' % (event_type, server.uuid))


class RebuildOutcome(object):
    """What the block of :func:`rebuild_notifications` tells of its end.

    :ivar server_deleted: set by the block when the server was deleted
        while it moved, so it was not handed to the conductor.
    """

    def __init__(self):
        self.server_deleted = False


@contextlib.contextmanager
def rebuild_notifications(context, server, image_uuid, request_spec_id):
    """Notify START, then how the rebuild ended; exceptions are re-raised.

    END when the server was handed to the conductor; ABANDONED when the
    block says the server was deleted meanwhile; REFUSED (INFO) when the
    block raises a RequestRefused, the answer to a rebuild that lost a
    race; ERROR for any other exception.

    :param request_spec_id: the server's RequestSpec id, as read before the
        block changes anything.
    :returns: (as the ``with`` target) a :class:`RebuildOutcome`.
    """
    notify_rebuild(context, START, server, image_uuid, request_spec_id)
    outcome = RebuildOutcome()
    try:
        yield outcome
    except exception.RequestRefused as refusal:
        notify_rebuild(context, REFUSED, server, image_uuid,
                       request_spec_id, refusal=refusal)
        raise
    except Exception as exc:
        notify_rebuild(context, ERROR, server, image_uuid, request_spec_id,
                       fault=exc)
        raise
    notify_rebuild(context, ABANDONED if outcome.server_deleted else END,
                   server, image_uuid, request_spec_id)
