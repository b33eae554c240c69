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

"""Sending ``cell0_rebuild.wait.<phase>`` for a server that waits for room.

As the rebuild's notifications (:mod:`.rebuild`): only news. Failing to
send one is logged and changes nothing the dispatcher does, and it waits
for one at most ``[cell0_rebuild] notification_timeout`` seconds through
the same background sender.
"""

from oslo_config import cfg
from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild.notifications import payloads
from nova_cell0_rebuild.notifications import sender

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

START = 'start'
ATTEMPT = 'attempt'
END = 'end'

EVENT_TYPE = 'cell0_rebuild.wait.%s'

#: wait.attempt outcomes.
DISPATCHED = 'dispatched'
REFUSED = 'refused'

#: wait.end reasons.
REBUILT = 'rebuilt'
DEADLINE = 'deadline'
CANCELLED = 'cancelled'
DELETED = 'deleted'
PROJECT_NOT_ENABLED = 'project_not_enabled'


def _payload(phase, wait, extra):
    if phase == ATTEMPT:
        return payloads.Cell0RebuildWaitAttemptPayload.from_wait(
            wait, **extra)
    if phase == END:
        return payloads.Cell0RebuildWaitEndPayload.from_wait(wait, **extra)
    return payloads.Cell0RebuildWaitPayload.from_wait(wait, **extra)


def _notify(context, phase, wait, **extra):
    """Send ``cell0_rebuild.wait.<phase>`` (info) if Nova sends versioned
    notifications; never raises.
    """
    if not nova_notifications.versioned_enabled():
        return
    event_type = EVENT_TYPE % phase
    try:
        payload = _payload(phase, wait, extra)
        payload.obj_reset_changes(recursive=True)
        primitive = payload.obj_to_primitive()
    except Exception:
        LOG.exception('Could not send the %s notification of server %s',
                      event_type, wait.instance_uuid)
        return
    options = CONF.cell0_rebuild

    def send():
        try:
            nova_notifications.send(context, 'info', event_type, primitive,
                                    retry=options.notification_retries)
        except Exception:
            LOG.exception('Could not send the %s notification of server %s',
                          event_type, wait.instance_uuid)
    sender.SENDER.submit(send, options.notification_timeout,
                         '%s (server %s)' % (event_type, wait.instance_uuid))


def notify_start(context, wait):
    """A wait began (intake, or ``PUT .../wait``)."""
    _notify(context, START, wait)


def notify_attempt(context, wait, request_id, refusal=None):
    """An automatic rebuild of the waiting server returned or was refused.

    :param wait: the Cell0Wait as dispatched (its ``attempts`` counts
        this one).
    :param refusal: the RequestRefused that refused it (a GateRefused
        names its gate), or None when it was handed to Nova.
    """
    if refusal is None:
        _notify(context, ATTEMPT, wait, request_id=request_id,
                shape_key=wait.shape_key, outcome=DISPATCHED, gate=None,
                reason=None, code=None)
        return
    _notify(context, ATTEMPT, wait, request_id=request_id,
            shape_key=wait.shape_key, outcome=REFUSED,
            gate=getattr(refusal, 'gate', None), reason=str(refusal),
            code=refusal.status)


def notify_end(context, wait, reason):
    """A wait ended: REBUILT, DEADLINE, CANCELLED, DELETED or
    PROJECT_NOT_ENABLED.
    """
    _notify(context, END, wait, reason=reason)
