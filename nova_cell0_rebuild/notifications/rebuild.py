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
changes the answer to the rebuild request.
"""

import contextlib

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild.notifications import payloads

LOG = logging.getLogger(__name__)

START = 'start'
END = 'end'
ERROR = 'error'
REFUSED = 'refused'

EVENT_TYPE = 'cell0_rebuild.rebuild.%s'

_PRIORITIES = {START: 'info', END: 'info', ERROR: 'error', REFUSED: 'info'}

# notify_rebuild looks the RequestSpec id up itself unless given one.
_LOOK_UP = object()


def _payload(context, phase, server, image_uuid, request_spec_id, refusal,
             fault):
    if request_spec_id is _LOOK_UP:
        request_spec_id = nova_notifications.request_spec_id(
            context, server.uuid)
    args = (context, server, image_uuid, request_spec_id)
    if phase == REFUSED:
        return payloads.Cell0RebuildRefusedPayload.from_server(
            *args, gate=refusal.gate, reason=str(refusal),
            code=refusal.status)
    if phase == ERROR:
        return payloads.Cell0RebuildErrorPayload.from_server(
            *args, fault=payloads.Cell0RebuildFaultPayload.from_exception(
                fault))
    return payloads.Cell0RebuildPayload.from_server(*args)


def notify_rebuild(context, phase, server, image_uuid=None,
                   request_spec_id=_LOOK_UP, refusal=None, fault=None):
    """Send ``cell0_rebuild.rebuild.<phase>`` if Nova sends versioned ones.

    :param phase: START, END, ERROR or REFUSED.
    :param server: the gates' Cell0Server.
    :param image_uuid: the image the server is rebuilt with.
    :param request_spec_id: the server's RequestSpec id; looked up when
        not given.
    :param refusal: the GateRefused, for REFUSED.
    :param fault: the exception, for ERROR.
    """
    if phase not in _PRIORITIES:
        raise ValueError('unknown notification phase %r' % phase)
    if not nova_notifications.versioned_enabled():
        return
    try:
        payload = _payload(context, phase, server, image_uuid,
                           request_spec_id, refusal, fault)
        payload.obj_reset_changes(recursive=True)
        nova_notifications.send(context, _PRIORITIES[phase],
                                EVENT_TYPE % phase,
                                payload.obj_to_primitive())
    except Exception:
        LOG.exception('Could not send the %s notification of the rebuild '
                      'of server %s from cell0', EVENT_TYPE % phase,
                      server.uuid)


@contextlib.contextmanager
def rebuild_notifications(context, server, image_uuid, request_spec_id):
    """Notify START, then END, or ERROR if the block raises (re-raised).

    :param request_spec_id: the server's RequestSpec id, as read before the
        block changes anything.
    """
    notify_rebuild(context, START, server, image_uuid, request_spec_id)
    try:
        yield
    except Exception as exc:
        notify_rebuild(context, ERROR, server, image_uuid, request_spec_id,
                       fault=exc)
        raise
    notify_rebuild(context, END, server, image_uuid, request_spec_id)
