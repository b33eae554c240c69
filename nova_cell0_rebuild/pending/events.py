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

"""Which of Nova's versioned notifications the pending service reads, and
what each means (spec ``pending``, "The service").

Three kinds:

* **room freed**: a pass is worth running. Some are sent once placement
  has freed the allocation (:data:`FREED`); others before it, and ask for
  a second, late pass too (:data:`FREED_LATE`);
* **a burial** (``compute_task.build_instances.error``): the dispatcher's
  intake, which opens a wait or settles a dispatched one buried again;
* **settle signals** of a server the dispatcher handed to Nova: the
  scheduler claimed a host (``instance.create.start``) or it was deleted
  (``instance.delete.end``).

Notifications are hints: the endpoint acknowledges each on receipt and
hands it to the service's worker, never raising into oslo.messaging; what
a lost one would have done, the sweep does.
"""

import re

from oslo_log import log as logging
import oslo_messaging

from nova_cell0_rebuild.pending import settle

LOG = logging.getLogger(__name__)

DELETE_END = settle.DELETED
CREATE_START = settle.CREATED
BURIAL = settle.BURIED
#: Sent once placement freed the allocation.
FREED = (DELETE_END, 'instance.shelve_offload.end',
         'instance.resize_revert.end')
#: Sent before placement is updated (or the compute's provider and trait
#: are): a pass now, and one after late_event_recheck_seconds.
FREED_LATE = ('instance.resize_confirm.end',
              'instance.live_migration_post.end', 'service.update',
              'service.create')
SERVICE_EVENTS = ('service.update', 'service.create')
COMPUTE_BINARY = 'nova-compute'
#: Ours: a wait opened, by ``PUT .../wait`` in nova-api or by the intake.
#: The API stores it without its request shape (computing one calls
#: Neutron and Cyborg): the service computes it at once, not at its next
#: sweep, and a pass looks for room.
WAIT_START = 'cell0_rebuild.wait.start'
EVENT_TYPES = FREED + FREED_LATE + (BURIAL, CREATE_START, WAIT_START)


class Hint(object):
    """What one notification asks of the service.

    :ivar freed: None, or 'now' / 'late' (room freed; see module doc).
    :ivar burial: the ComputeTaskPayload primitive for the intake, or None.
    :ivar settle: (instance uuid, settle signal) or None.
    :ivar opened: the instance uuid of a wait just opened, or None.
    """

    def __init__(self, freed=None, burial=None, settle=None, opened=None):
        self.freed = freed
        self.burial = burial
        self.settle = settle
        self.opened = opened

    def __bool__(self):
        return bool(self.freed or self.burial or self.settle or self.opened)

    def __repr__(self):
        return 'Hint(freed=%r, burial=%r, settle=%r, opened=%r)' % (
            self.freed, self.burial is not None, self.settle, self.opened)


def _data(payload):
    """The fields of a versioned payload (``nova_object.data``)."""
    if isinstance(payload, dict):
        data = payload.get('nova_object.data', payload)
        if isinstance(data, dict):
            return data
    return {}


def _compute_enabled(data):
    """A service.update/create of a compute that can take servers."""
    return (data.get('binary') == COMPUTE_BINARY and
            not data.get('disabled') and not data.get('forced_down'))


def read(event_type, payload, in_flight=()):
    """The Hint of one notification (empty when it means nothing to us).

    :param in_flight: uuids the dispatcher handed to Nova and has not seen
        settle: a ``instance.create.start`` or a deletion of one of them
        settles it.
    """
    data = _data(payload)
    if event_type == BURIAL:
        return Hint(burial=payload)
    if event_type == WAIT_START:
        return Hint(opened=data.get('instance_uuid'))
    uuid = data.get('uuid')
    if event_type == CREATE_START:
        return Hint(settle=(uuid, settle.CREATED)
                    if uuid in in_flight else None)
    if event_type == DELETE_END:
        # A server that held no host (buried in cell0) freed nothing; its
        # wait, if any, ends.
        if not data.get('host'):
            return Hint(settle=(uuid, settle.DELETED) if uuid else None)
        return Hint(freed='now', settle=(uuid, settle.DELETED)
                    if uuid in in_flight else None)
    if event_type in SERVICE_EVENTS:
        return Hint(freed='late' if _compute_enabled(data) else None)
    if event_type in FREED:
        return Hint(freed='now')
    if event_type in FREED_LATE:
        return Hint(freed='late')
    return Hint()


class PendingEndpoint(object):
    """The oslo.messaging endpoint of the pending service.

    :param service: has ``in_flight()`` (uuids) and ``hint(Hint)``; the
        latter only queues work for the service's worker.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^(%s)$' % '|'.join(re.escape(event)
                                       for event in EVENT_TYPES))

    def __init__(self, service):
        self._service = service

    def _take(self, event_type, payload):
        try:
            hint = read(event_type, payload, self._service.in_flight())
            if hint:
                self._service.hint(hint)
        except Exception:
            # Requeued, a notification that fails each time would come
            # back for ever; the sweep does what it would have done.
            LOG.exception('Notification %s not taken by the pending '
                          'service: left to its sweep', event_type)
        return oslo_messaging.NotificationResult.HANDLED

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._take(event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._take(event_type, payload)
