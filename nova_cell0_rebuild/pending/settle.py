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

"""Settling the dispatcher's rebuilds: what became of a dispatched server.

A dispatched wait is unsettled until a settle signal (Nova's
``instance.create.start``: the scheduler placed it; its burial
notification: buried again; ``instance.delete.end``) or until its lease
ran out, when the dispatcher looks where the server is (spec "The
service", "Failure windows" S). Part of :class:`.dispatcher.Dispatcher`.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.notifications import wait as wait_notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait_queue as queue
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.pending import intake as intakes
from nova_cell0_rebuild.pending import order

LOG = logging.getLogger(__name__)

State = fields.WaitState
Reason = fields.WaitReason

#: Settle signals (spec "The service"), named by Nova's event types.
CREATED = 'instance.create.start'
BURIED = 'compute_task.build_instances.error'
DELETED = 'instance.delete.end'
SETTLE_SIGNALS = (CREATED, BURIED, DELETED)


def naive_now(now):
    return timeutils.normalize_time(now) if now else timeutils.utcnow()


class Settling(object):
    """The settle half of the dispatcher: needs ``context``, ``options``
    and ``in_flight`` ({uuid: InFlight}).
    """

    def _next_attempt_at(self, now, attempts):
        options = self.options
        return order.next_attempt_at(now, attempts,
                                     options.backoff_initial_seconds,
                                     options.backoff_max_seconds)

    def _forget(self, context, wait, reason):
        """The server left cell0 or was deleted: its row goes."""
        self.in_flight.pop(wait.instance_uuid, None)
        wait.destroy()
        wait_notifications.notify_end(context, wait, reason)

    def settle(self, context, instance_uuid, signal, now=None):
        """A settle signal for a server: rebuilt, buried again or deleted.

        :param signal: CREATED, BURIED or DELETED.
        :returns: the signal acted on, or None when the server has no
            wait (or the signal changes nothing).
        """
        if signal not in SETTLE_SIGNALS:
            raise ValueError('unknown settle signal %r' % signal)
        context = context or self.context
        wait = objects.Cell0Wait.get_by_instance_uuid(context,
                                                      instance_uuid)
        if wait is None:
            return None
        if signal == CREATED:
            self._forget(context, wait, wait_notifications.REBUILT)
        elif signal == DELETED:
            self._forget(context, wait, wait_notifications.DELETED)
        elif not self._buried_again(context, wait, naive_now(now)):
            return None
        return signal

    def _buried_again(self, context, wait, now):
        """Our attempt was buried again: back off, or end at the deadline.

        A burial of a server that was not dispatched by us (a user's
        rebuild) changes nothing: it waits on, no attempt counted.
        """
        self.in_flight.pop(wait.instance_uuid, None)
        if wait.state != State.DISPATCHED:
            return False
        if now >= timeutils.normalize_time(wait.deadline):
            if wait.end(Reason.DEADLINE, 'buried again after its deadline',
                        now=now):
                wait_notifications.notify_end(context, wait,
                                              wait_notifications.DEADLINE)
            return True
        if not wait.back_off(
                Reason.SCHEDULER_REFUSED,
                'attempt %d was buried again by the scheduler'
                % wait.attempts,
                self._next_attempt_at(now, wait.attempts)):
            return False
        # Recomputed after each attempt (spec "Placement pre-check"): a
        # wrong shape that claimed to fit costs one attempt only. The
        # back-off is written: a failure here (Neutron, Cyborg) leaves the
        # old shape, which the sweep's refresh recomputes.
        try:
            intakes.compute_shape(context, wait, now=now)
        except Exception:
            LOG.exception('Could not compute the request shape of waiting '
                          'server %s again', wait.instance_uuid)
        return True

    def look(self, context, instance_uuids):
        """{uuid: settle signal} from where the servers are now, one
        statement; servers still building (a BuildRequest, no cell) are
        left out: not settled yet.
        """
        found = nova_servers.where_is(context, list(instance_uuids))
        signals = {}
        for uuid in instance_uuids:
            where = found.get(uuid)
            if where is None or where.queued_for_delete:
                signals[uuid] = DELETED
            elif where.in_real_cell:
                signals[uuid] = CREATED
            elif where.cell_uuid is not None:
                signals[uuid] = BURIED
        return signals

    def settle_in_flight(self, context=None, now=None):
        """Settle this dispatcher's rebuilds whose outcome is visible.

        :returns: {uuid: signal} of those settled.
        """
        context = context or self.context
        signals = self.look(context, list(self.in_flight))
        for uuid, signal in signals.items():
            self.settle(context, uuid, signal, now=now)
        return signals

    def sweep_gone(self, context=None, page_size=100):
        """Forget the waits of servers deleted or moved out of cell0 whose
        settle signal was missed (any state; a dispatched one of ours
        still building is left to settle).

        Pages the table: two statements a page (the uuids, where they are).

        :returns: {uuid: signal} of the rows forgotten.
        """
        context = context or self.context
        forgotten = {}
        after = None
        while True:
            uuids = queue.page(context, after, page_size)
            if not uuids:
                return forgotten
            for uuid, signal in self.look(context, uuids).items():
                if signal != BURIED:
                    self.settle(context, uuid, signal)
                    forgotten[uuid] = signal
            if len(uuids) < page_size:
                return forgotten
            after = uuids[-1]

    def settle_expired(self, context=None, now=None):
        """Settle dispatched rows whose lease ran out (their dispatcher
        died or lost track): by where the server is now.

        :returns: {uuid: signal} of those settled.
        """
        context = context or self.context
        now = naive_now(now)
        waits = objects.Cell0Wait.list_expired_dispatches(context, now)
        signals = self.look(context, [w.instance_uuid for w in waits])
        for uuid, signal in signals.items():
            self.settle(context, uuid, signal, now=now)
        return signals
