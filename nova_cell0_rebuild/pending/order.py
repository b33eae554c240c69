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

"""The fair order: which waiting servers a pass rebuilds, and in what order.

The rule is that of "Fair order" in :doc:`/contributor/specs/pending`,
written as pure functions of plain values: no database, no Nova, no clock
(``now`` is an argument). The dispatcher reads the rows, asks placement,
calls :func:`plan` and acts on its answer; keeping the rule here lets a
test replay any sequence of passes and lets the user page quote it.

The rule, as a user page may state it:

* A server waits in order of its first burial (``queued_at``); a failed
  attempt delays it (back-off) but does not move it back in the queue.
* Projects take turns: each pass visits the projects that have a server
  that fits, the one served longest ago first (never served before any
  served one; among those, the one with the oldest fitting server, then
  the project id), and each visit rebuilds that project's oldest server
  that fits. An older server that does not fit does not hold back younger
  ones that do.
* No more rebuilds of a shape than placement has room for, counting ours
  not yet settled; no more than ``max_in_flight`` unsettled in all.
* A server that waited longer than ``reserve_after_seconds`` and does
  not fit while others do (the oldest such) reserves: passes rebuild
  nothing, so freed capacity accumulates for it, until it fits (it is
  then rebuilt alone, and passes still rebuild nothing until it settles:
  Nova places each rebuild on its own, in any order, so another one sent
  beside it could take its room), it stops waiting, or
  ``reserve_for_seconds`` passed. A reservation is followed
  by a cool-down as long as it lasted, during which nobody reserves:
  reservations never take more than half the time.
"""

import collections
import dataclasses
import datetime
import itertools
import typing as ty

#: The state of a wait row that may be served (spec: "Back-off and
#: persistence").
WAITING = 'waiting'

#: Why a wait is not eligible, for logs and ``last_reason``.
NOT_WAITING = 'not_waiting'
NO_SHAPE = 'no_shape'
PROJECT_NOT_ENABLED = 'project_not_enabled'
DEADLINE = 'deadline'
BACKING_OFF = 'backing_off'


@dataclasses.dataclass(frozen=True)
class Waiting(object):
    """What the order needs of one row of ``cell0_rebuild_waits``.

    Times are datetimes of one kind (naive UTC, as the database returns
    them); ``now`` passed beside them must be of the same kind.
    """

    uuid: str
    project_id: str
    queued_at: datetime.datetime
    shape_key: ty.Optional[str]
    deadline: datetime.datetime
    next_attempt_at: ty.Optional[datetime.datetime] = None
    attempts: int = 0
    state: str = WAITING


@dataclasses.dataclass(frozen=True)
class Fit(object):
    """Placement's answer for one shape: does it fit, and how many times.

    ``room`` is the spec's ``k``, at least 1 when it fits (one per root
    provider) and 0 when it does not; anything else is a caller's bug,
    refused here rather than read one way or the other.
    """

    fits: bool
    room: int

    def __post_init__(self):
        if self.room < 0 or self.fits != (self.room > 0):
            raise ValueError('inconsistent fit: fits=%s room=%s'
                             % (self.fits, self.room))


#: A shape placement has no candidate for.
NO_FIT = Fit(False, 0)


@dataclasses.dataclass(frozen=True)
class Reservation(object):
    """The reservation state the dispatcher keeps from pass to pass.

    ``holder`` and ``started_at`` are set while a reservation is held;
    ``cool_down_until`` is when the last one's cool-down ends (None: never
    had one). Nobody reserves before ``cool_down_until``.
    """

    holder: ty.Optional[str] = None
    started_at: ty.Optional[datetime.datetime] = None
    cool_down_until: ty.Optional[datetime.datetime] = None


#: No reservation held or cooling down, as a new dispatcher starts.
NO_RESERVATION = Reservation()


@dataclasses.dataclass(frozen=True)
class Settings(object):
    """The options of ``[cell0_rebuild_pending]`` the order reads."""

    max_in_flight: int
    reserve_after_seconds: float = 900
    reserve_for_seconds: float = 300

    def __post_init__(self):
        if self.max_in_flight < 1:
            raise ValueError('max_in_flight must be at least 1')
        if self.reserve_after_seconds < 0 or self.reserve_for_seconds <= 0:
            raise ValueError('reserve_after_seconds must be at least 0 '
                             'and reserve_for_seconds more than 0')


@dataclasses.dataclass(frozen=True)
class Plan(object):
    """What a pass does, and the state the next pass starts from.

    ``dispatch``: uuids to rebuild, in this order. ``reservation``: the new
    reservation state. ``last_served``: project id to the serial number of
    its latest dispatch (larger: served more recently). ``held_back``: the
    pass dispatched nothing because ``reservation.holder`` does not fit.
    """

    dispatch: ty.Tuple[str, ...]
    reservation: Reservation
    last_served: ty.Mapping[str, int]
    held_back: bool = False


def why_not_eligible(wait, now, project_enabled):
    """Why a wait may not be served in a pass at ``now``, or None if it may.

    :param project_enabled: callable taking a project id, true when the
        project may wait (``[cell0_rebuild_pending] projects``).
    :returns: one of the reason constants of this module, or None.
    """
    if wait.state != WAITING:
        return NOT_WAITING
    if wait.shape_key is None:
        return NO_SHAPE
    if not project_enabled(wait.project_id):
        return PROJECT_NOT_ENABLED
    if now >= wait.deadline:
        return DEADLINE
    if wait.next_attempt_at is not None and wait.next_attempt_at > now:
        return BACKING_OFF
    return None


def eligible(waits, now, project_enabled):
    """The waits a pass at ``now`` may serve, in the order given."""
    return [wait for wait in waits
            if why_not_eligible(wait, now, project_enabled) is None]


def backoff_seconds(attempts, initial, cap):
    """Delay before the next attempt after ``attempts`` failed ones.

    ``min(cap, initial * 2 ** (attempts - 1))``, no jitter: there is one
    dispatcher, so no herd to spread. Doubling stops at the cap, so a
    large ``attempts`` cannot overflow a float.

    :returns: seconds as a float; 0.0 when nothing failed yet.
    :raises: ValueError for negative attempts.
    """
    if attempts < 0:
        raise ValueError('attempts must not be negative: %s' % attempts)
    if attempts == 0:
        return 0.0
    delay = float(initial)
    for _ in range(attempts - 1):
        if delay >= cap:
            break
        delay *= 2
    return min(float(cap), delay)


def next_attempt_at(now, attempts, initial, cap):
    """When a wait whose ``attempts``-th attempt failed at ``now`` is due."""
    return now + datetime.timedelta(
        seconds=backoff_seconds(attempts, initial, cap))


def shape_limits(eligible_waits, max_in_flight):
    """The ``limit`` of each shape's placement query, keyed by shape.

    One query per shape with an eligible server, asking for
    ``min(eligible servers of the shape, max_in_flight)`` candidates: a
    pass never dispatches more of a shape than either.
    """
    counts = collections.Counter(w.shape_key for w in eligible_waits)
    return {shape: min(count, max_in_flight)
            for shape, count in sorted(counts.items())}


def shapes_to_query(eligible_waits):
    """The distinct shape keys of the eligible waits, sorted."""
    return sorted({w.shape_key for w in eligible_waits})


def room_by_shape(fits, in_flight_by_shape):
    """Room left per shape once our unsettled rebuilds are counted.

    Placement does not show the claims of rebuilds not yet scheduled, so
    each unsettled rebuild of a shape takes one of its room.
    """
    return {shape: max(0, fit.room - in_flight_by_shape.get(shape, 0))
            for shape, fit in fits.items()}


def plan(eligible_waits, fits, in_flight_by_shape, in_flight_total,
         last_served, reservation, now, settings, holder_in_flight=False):
    """One pass of the fair order (module docstring, spec "Fair order").

    :param eligible_waits: Waiting values already filtered by
        :func:`eligible`; a uuid given twice counts once. The dispatcher
        passes, per project and shape with room, its oldest
        ``min(room, max_in_flight)``; the oldest of the shapes without
        room; and the holder while a reservation is held (a holder
        missing here is taken as no longer eligible: its reservation
        ends).
    :param fits: shape key to :class:`Fit`; a missing shape does not fit.
    :param in_flight_by_shape: shape key to our unsettled rebuilds.
    :param in_flight_total: all our unsettled rebuilds.
    :param last_served: project id to serial, from the previous Plan.
    :param reservation: the previous Plan's :class:`Reservation`.
    :param holder_in_flight: the reservation's holder was dispatched and
        has not settled: the reservation holds, and passes send nothing,
        until it does.
    :returns: a :class:`Plan`.
    """
    waits = _oldest_first(eligible_waits)
    room = room_by_shape(fits, in_flight_by_shape)
    slots = max(0, settings.max_in_flight - in_flight_total)
    served = dict(last_served)
    serials = itertools.count(max(served.values(), default=0) + 1)
    reservation = _expire(reservation, waits, now, settings,
                          holder_in_flight)
    if reservation.holder is None:
        starving = _starving(waits, room, reservation, now, settings)
        if starving is not None and slots > 0 and any(
                room.get(w.shape_key, 0) > 0 for w in waits):
            return Plan((), Reservation(starving.uuid, now), served,
                        held_back=True)
    if reservation.holder is not None:
        if holder_in_flight:
            return Plan((), reservation, served, held_back=True)
        holder = next(w for w in waits if w.uuid == reservation.holder)
        if room.get(holder.shape_key, 0) < 1:
            return Plan((), reservation, served, held_back=True)
        if slots > 0:
            # Alone, and held until it settles: Nova places each hand-off
            # on its own, in any order, so a server dispatched beside it,
            # or in a pass before its claim, could take its room.
            served[holder.project_id] = next(serials)
            return Plan((holder.uuid,), reservation, served)
    dispatch = _round_robin(waits, room, slots, served, serials)
    return Plan(tuple(dispatch), reservation, served)


def _age(wait):
    """Sort key of the queue: first burial, then uuid for a total order."""
    return (wait.queued_at, wait.uuid)


def _oldest_first(waits):
    """The waits, each uuid once, oldest first."""
    unique = {}
    for wait in waits:
        unique.setdefault(wait.uuid, wait)
    return sorted(unique.values(), key=_age)


def _end(reservation, at):
    """The state after a reservation ends at ``at``: its cool-down.

    The cool-down lasts as long as the reservation did, so reservations
    take at most half of any stretch of time, and a reservation that ended
    quickly (its holder fitted at the next freed slot) does not keep the
    next starving server waiting for a whole ``reserve_for_seconds``.
    """
    return Reservation(cool_down_until=at + (at - reservation.started_at))


def _expire(reservation, waits, now, settings, holder_in_flight=False):
    """End a held reservation that ran out or whose holder stopped waiting.

    One that ran out ends at its expiry, not at ``now``: passes may be far
    apart (the sweep), and the cool-down must not grow with the gap.
    """
    if reservation.holder is None:
        return reservation
    expiry = reservation.started_at + datetime.timedelta(
        seconds=settings.reserve_for_seconds)
    if now >= expiry:
        return _end(reservation, expiry)
    if not holder_in_flight and reservation.holder not in {
            w.uuid for w in waits}:
        return _end(reservation, now)
    return reservation


def _starving(waits, room, reservation, now, settings):
    """The server that may start a reservation in this pass, or None.

    Outside a cool-down: the oldest eligible server that waited longer
    than ``reserve_after_seconds`` (0: never) and whose shape has no room
    now. An old server that fits needs no reservation: its project's turn
    serves it. Reserving for every old server instead would turn a backlog
    older than ``reserve_after_seconds`` into one queue for all projects.
    """
    if settings.reserve_after_seconds <= 0:
        return None
    if (reservation.cool_down_until is not None
            and now < reservation.cool_down_until):
        return None
    for wait in waits:
        waited = (now - wait.queued_at).total_seconds()
        if waited <= settings.reserve_after_seconds:
            return None  # oldest first: nobody after waited longer
        if room.get(wait.shape_key, 0) < 1:
            return wait
    return None


def _round_robin(waits, room, slots, served, serials):
    """Dispatch round-robin across projects, oldest fitting one per visit.

    A project is visited again after every other project with room had its
    turn; one whose servers have no room left drops out of the pass (room
    only shrinks within a pass). ``room`` and ``served`` are updated.
    """
    lanes = collections.defaultdict(collections.deque)
    for wait in waits:
        if room.get(wait.shape_key, 0) > 0:
            lanes[wait.project_id].append(wait)
    queue = collections.deque(sorted(lanes, key=lambda project: (
        project in served, served.get(project, 0),
        lanes[project][0].queued_at, project)))
    dispatch = []
    while queue and len(dispatch) < slots:
        project = queue.popleft()
        wait = _next_with_room(lanes[project], room)
        if wait is None:
            continue
        dispatch.append(wait.uuid)
        room[wait.shape_key] -= 1
        served[project] = next(serials)
        queue.append(project)
    return dispatch


def _next_with_room(lane, room):
    """Take the lane's oldest server whose shape still has room, or None.

    Servers skipped have no room left in this pass, so they are dropped
    from the lane: they cannot block the younger ones behind them.
    """
    while lane:
        wait = lane.popleft()
        if room.get(wait.shape_key, 0) > 0:
            return wait
    return None
