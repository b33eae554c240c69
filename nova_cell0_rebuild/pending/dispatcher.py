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

"""The pending dispatcher: passes, in-flight rebuilds, settling (issue 27).

Driven by calls: the service (a later step) calls :meth:`Dispatcher.
run_pass` on events and on its sweep timer, :meth:`Dispatcher.intake`
for a burial notification and :meth:`Dispatcher.settle` for a settle
signal; tests call them directly. A pass reads a constant number of
statements (``objects/cell0_wait_queue.py``), asks placement once per
shape with an eligible server, lets ``pending/order.py`` pick the servers
and rebuilds each in this process exactly as ``rebuild_as_admin`` does for
the manage command: same gates, move journal lease and heal-first rule.

Safety against two rebuilds of one server does not rest here: the wait
row's compare-and-swap and the move's own claim (spec "Several copies").
The in-flight bookkeeping is memory only: a new dispatcher settles rows
whose lease ran out (:meth:`Dispatcher.settle_expired`).
"""

import dataclasses
import datetime
import typing as ty

from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_placement
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import rebuild as rebuild_flow
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild.conf import cell0_rebuild_pending as pending_conf
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.notifications import wait as wait_notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait_queue as queue
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.pending import intake as intakes
from nova_cell0_rebuild.pending import order
from nova_cell0_rebuild.pending import settle

LOG = logging.getLogger(__name__)

State = fields.WaitState
Reason = fields.WaitReason

#: Settle signals, as pending/settle.py names them.
CREATED = settle.CREATED
BURIED = settle.BURIED
DELETED = settle.DELETED

#: ``[cell0_rebuild_pending] projects`` value that enables every project.
ALL_PROJECTS = pending_conf.ALL_PROJECTS


@dataclasses.dataclass
class PassReport(object):
    """What a pass did, for logs and tests.

    :ivar queries: shapes asked of placement.
    :ivar dispatched: uuids handed to Nova, in order.
    :ivar refused: uuids whose rebuild was refused (gate, race, gone).
    :ivar ended: uuids whose wait ended (deadline).
    :ivar held_back: the pass kept freed capacity for a reservation.
    """

    queries: int = 0
    dispatched: ty.List[str] = dataclasses.field(default_factory=list)
    refused: ty.List[str] = dataclasses.field(default_factory=list)
    ended: ty.List[str] = dataclasses.field(default_factory=list)
    held_back: bool = False


@dataclasses.dataclass(frozen=True)
class InFlight(object):
    """One dispatched rebuild not settled yet."""

    shape_key: ty.Optional[str]
    since: datetime.datetime


def project_filter(conf):
    """Project ids a pass serves, or None for every project."""
    projects = conf.cell0_rebuild_pending.projects
    if ALL_PROJECTS in projects:
        return None
    return list(projects)


_naive_now = settle.naive_now


def _naive(moment):
    """Naive UTC, as the rows and ``now`` are (a Cell0Wait's are aware)."""
    return None if moment is None else timeutils.normalize_time(moment)


def _as_waiting(row):
    """An order.Waiting from a queue row or a Cell0Wait."""
    return order.Waiting(
        uuid=row.instance_uuid, project_id=row.project_id,
        queued_at=_naive(row.queued_at), shape_key=row.shape_key,
        deadline=_naive(row.deadline),
        next_attempt_at=_naive(row.next_attempt_at),
        attempts=row.attempts, state=row.state)


def _refuse_if_locked(context, uuid):
    """A locked server waits: its owner's lock holds against our rebuild.

    The ``lock`` gate, as Nova, lets an admin through, and the dispatcher
    acts with the service's admin context; but it acts for the server's
    user, whose own rebuild a lock refuses (409). Counted as an attempt
    that a gate refused: the wait backs off until it is unlocked.

    :raises: GateRefused('lock', 409).
    """
    mapping = nova_servers.get_mapping(context, uuid)
    if mapping is None or not nova_servers.is_cell0(mapping.cell_mapping):
        return  # the rebuild answers it
    instance = nova_servers.get_cell0_instance(context, mapping.cell_mapping,
                                               uuid)
    if instance is not None and instance.locked:
        raise exception.GateRefused('lock', 409, _(
            'Instance %s is locked: it is rebuilt once its owner or an '
            'admin unlocks it.') % uuid)


class Dispatcher(settle.Settling):
    """The one active dispatcher of the pending service.

    :param conf: the ConfigOpts with the plugin's options.
    :param context: the service user's admin RequestContext
        (``nova_service_context.service_context``); each attempt runs in a
        copy of it with a request id of its own.
    :param owner: names this dispatcher in the rows it dispatches.
    :param fence: called before each dispatch, answers whether this copy
        still leads (:meth:`.leader.Leadership.renew`: the epoch's
        heartbeat); False stops the pass. None: no fence (one copy, tests).
    """

    def __init__(self, conf, context, owner, fence=None):
        self.conf = conf
        self.context = context
        self.owner = owner
        self.fence = fence
        self.in_flight = {}
        self.reservation = order.NO_RESERVATION
        self.last_served = {}

    @property
    def options(self):
        return self.conf.cell0_rebuild_pending

    def _settings(self):
        options = self.options
        return order.Settings(
            max_in_flight=options.max_in_flight,
            reserve_after_seconds=options.reserve_after_seconds,
            reserve_for_seconds=options.reserve_for_seconds)

    def _project_enabled(self, project_id):
        return wait_opt_in.project_enabled(self.conf, project_id)

    # Intake.

    def intake(self, context, payload, now=None):
        """A burial notification (``compute_task.build_instances.error``):
        the server starts to wait if its create opted in; a burial of a
        server we dispatched settles it.

        :returns: the Cell0Wait opened, or None.
        """
        context = context or self.context
        try:
            uuid = intakes.burials.read_notice(payload).instance_uuid
        except intakes.burials.NotAnnounced:
            return None
        if objects.Cell0Wait.get_by_instance_uuid(context, uuid) is not None:
            self.settle(context, uuid, BURIED, now=now)
            return None
        return intakes.intake(context, self.conf, payload, now=now)

    def shape_opened(self, context, uuid, now=None):
        """A wait just opened (``cell0_rebuild.wait.start``): compute its
        request shape now, which ``PUT .../wait`` leaves to the service,
        so that the pass this asks for can dispatch it; not at the next
        sweep, minutes later, with room freed meanwhile gone to others.

        :returns: its shape key, or None (no wait waiting without one, or
            no candidate possible: the reason is noted).
        """
        context = context or self.context
        wait = objects.Cell0Wait.get_by_instance_uuid(context, uuid)
        if (wait is None or wait.state != fields.WaitState.WAITING
                or wait.shape_key is not None):
            return None
        return intakes.compute_shape(context, wait, now=_naive_now(now))

    def sweep_intake(self, context=None, now=None):
        """Open the waits whose burial notification was missed."""
        return intakes.sweep_intake(context or self.context, self.conf,
                                    now=now)

    def refresh_shapes(self, context=None, now=None, limit=100):
        """Compute the shapes of waiting rows that have none, or one older
        than ``shape_ttl_seconds`` (for the sweep: it calls Neutron and
        Cyborg per server).

        :returns: the uuids whose shape was computed again.
        """
        context = context or self.context
        now = _naive_now(now)
        stale = now - datetime.timedelta(
            seconds=self.options.shape_ttl_seconds)
        uuids = queue.unshaped(context, stale, limit)
        for wait in objects.Cell0Wait.get_by_instance_uuids(
                context, uuids).values():
            intakes.compute_shape(context, wait, now=now)
        return uuids

    # A pass.

    def run_pass(self, context=None, now=None):
        """Dispatch the waiting servers placement has room for, fairly.

        :returns: a :class:`PassReport`.
        :raises: PlacementUnavailable: nothing was dispatched, the caller
            tries again after its pass back-off.
        """
        context = context or self.context
        now = _naive_now(now)
        report = PassReport()
        if not self.options.enabled:
            return report
        self._forget_old_in_flight(now)
        report.ended = self.end_past_deadline(context, now)
        projects = project_filter(self.conf)
        counts = queue.eligible_shapes(context, now, projects)
        if not counts:
            return report
        fits = self._ask_placement(context, counts, report)
        fitting = sorted(key for key, fit in fits.items() if fit.fits)
        rows = queue.heads(context, now, fitting,
                           self.options.max_in_flight, projects)
        waits = [_as_waiting(row) for row in rows]
        waits.extend(self._reservation_candidates(
            context, now, sorted(set(fits) - set(fitting)), projects))
        plan = order.plan(waits, fits, self._in_flight_by_shape(),
                          len(self.in_flight), self.last_served,
                          self.reservation, now, self._settings(),
                          holder_in_flight=self.holder_in_flight)
        self.reservation = plan.reservation
        self.last_served = dict(plan.last_served)
        report.held_back = plan.held_back
        for uuid in plan.dispatch:
            if not self._still_acting():
                break
            if self._dispatch_one(context, uuid, now):
                report.dispatched.append(uuid)
            else:
                report.refused.append(uuid)
        LOG.info('Pending pass: %d shape(s) asked, %d dispatched, %d '
                 'refused, %d ended%s', report.queries,
                 len(report.dispatched), len(report.refused),
                 len(report.ended),
                 ' (held back for %s)' % plan.reservation.holder
                 if plan.held_back else '')
        return report

    @property
    def holder_in_flight(self):
        """Whether the reservation's holder was dispatched and has not
        settled: passes send nothing until it does (``order.plan``).
        """
        holder = self.reservation.holder
        return holder is not None and holder in self.in_flight

    def _still_acting(self):
        """Whether this copy still leads (the fence): a deposed copy's
        pass stops before its next dispatch.
        """
        if self.fence is None or self.fence():
            return True
        LOG.warning('Dispatcher %s no longer leads: this pass dispatches '
                    'no more', self.owner)
        return False

    def _ask_placement(self, context, counts, report):
        """{shape key: order.Fit}, one candidates() call per shape; the
        waiting rows of a shape with no candidate are told why.
        """
        queries = objects.Cell0WaitShape.get_queries(context, list(counts))
        max_in_flight = self.options.max_in_flight
        fits = {}
        for key in sorted(counts):
            if key not in queries:
                LOG.warning('Request shape %s is not stored: its servers '
                            'wait for their shape to be computed again', key)
                continue
            answer = nova_placement.candidates(
                context, queries[key], min(counts[key], max_in_flight))
            report.queries += 1
            fits[key] = order.Fit(answer.fits, answer.room)
            if not answer.fits:
                queue.note_shape(context, key, Reason.NO_CANDIDATE,
                                 answer.summary)
        return fits

    def _reservation_candidates(self, context, now, unfit, projects):
        """The oldest eligible wait of each shape that does not fit and
        the reservation's holder, which the order needs to know whether a
        server starves (the heads of fitting shapes are read already).
        """
        found = []
        if self.options.reserve_after_seconds > 0:
            found.extend(_as_waiting(row) for row in queue.oldest_of_shapes(
                context, now, unfit, projects))
        holder = self.reservation.holder
        if holder is not None and holder not in {w.uuid for w in found}:
            wait = objects.Cell0Wait.get_by_instance_uuid(context, holder)
            if wait is not None and order.why_not_eligible(
                    _as_waiting(wait), now, self._project_enabled) is None:
                found.append(_as_waiting(wait))
        return found

    def _in_flight_by_shape(self):
        counts = {}
        for flight in self.in_flight.values():
            counts[flight.shape_key] = counts.get(flight.shape_key, 0) + 1
        return counts

    def _forget_old_in_flight(self, now):
        """A dispatched rebuild counts as in flight at most
        ``settle_timeout_seconds`` (its row is settled by
        :meth:`settle_expired`).
        """
        limit = now - datetime.timedelta(
            seconds=self.options.settle_timeout_seconds)
        for uuid, flight in list(self.in_flight.items()):
            if flight.since <= limit:
                del self.in_flight[uuid]

    # Acting.

    def _attempt_context(self, request_id):
        """The service's context with a request id of this attempt's own:
        Nova's instance action and our journal carry it.
        """
        attempt = self.context.elevated()
        attempt.request_id = request_id
        attempt.global_request_id = request_id
        return attempt

    def _dispatch_one(self, context, uuid, now):
        """Take the wait (compare-and-swap) and rebuild its server.

        :returns: True when the server was handed to Nova.
        """
        wait = objects.Cell0Wait.get_by_instance_uuid(context, uuid)
        if wait is None or not wait.dispatch(
                self.owner, self.options.settle_timeout_seconds, now=now):
            LOG.info('Wait of server %s changed since the pass read it: '
                     'not dispatched', uuid)
            return False
        request_id = 'req-%s' % uuidutils.generate_uuid()
        attempt = self._attempt_context(request_id)
        self.in_flight[uuid] = InFlight(wait.shape_key, now)
        try:
            _refuse_if_locked(attempt, uuid)
            rebuild_flow.rebuild_as_admin(attempt, self.conf, uuid)
        except exception.RequestRefused as refusal:
            self._refused(attempt, wait, request_id, refusal, now)
            return False
        except Exception:
            # Left dispatched: its lease runs out and settle_expired looks
            # where the server is.
            LOG.exception('Rebuild %s of waiting server %s failed',
                          request_id, uuid)
            return False
        wait.record_request_id(request_id)
        wait_notifications.notify_attempt(attempt, wait, request_id)
        LOG.info('Waiting server %s handed to Nova (request %s, attempt '
                 '%d)', uuid, request_id, wait.attempts)
        return True

    def _refused(self, context, wait, request_id, refusal, now):
        """What a refused rebuild means for its wait (spec "Back-off")."""
        uuid = wait.instance_uuid
        wait.record_request_id(request_id)
        wait_notifications.notify_attempt(context, wait, request_id,
                                          refusal=refusal)
        if refusal.status == 404:
            self._forget(context, wait, wait_notifications.DELETED)
            return
        if refusal.status == 409 and not isinstance(
                refusal, exception.GateRefused):
            # Another rebuild holds the server (a user, Aardvark, heal):
            # the row stays dispatched and settles on its outcome.
            LOG.info('Server %s is being rebuilt by someone else (%s): its '
                     'wait settles on that rebuild', uuid, refusal)
            return
        self.in_flight.pop(uuid, None)
        LOG.info('Rebuild %s of waiting server %s refused: %s', request_id,
                 uuid, refusal)
        wait.back_off(Reason.GATE_REFUSED, str(refusal),
                      self._next_attempt_at(now, wait.attempts))

    # Deadlines.

    def end_past_deadline(self, context, now, limit=1000):
        """End the waiting rows whose deadline passed; their servers stay
        in cell0, untouched. A dispatched one ends when it settles.

        :returns: their uuids.
        """
        uuids = queue.past_deadline(context, now, limit)
        ended = []
        for wait in objects.Cell0Wait.get_by_instance_uuids(
                context, uuids).values():
            if wait.end(Reason.DEADLINE, 'the deadline %sZ passed'
                        % wait.deadline.replace(tzinfo=None).isoformat(),
                        now=now):
                wait_notifications.notify_end(context, wait,
                                              wait_notifications.DEADLINE)
                ended.append(wait.instance_uuid)
        return ended
