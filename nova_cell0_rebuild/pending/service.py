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

"""The pending service: events, timers and leadership around the dispatcher.

No argv, no signals (``cmd/pending.py`` has those). One worker thread does
everything that touches the dispatcher, so the dispatcher needs no locks:
the listener's threads only queue hints (:mod:`.events`) and wake it.

* **Coalescing.** An event that frees room asks for a pass
  ``event_delay_seconds`` later; a pass already due within that window
  covers it, so a burst of deletions costs one pass. An event that arrives
  while a pass runs asks for one more pass after it. An event Nova sends
  before placement is updated asks, besides, for a late recheck after
  ``late_event_recheck_seconds`` (coalesced in the same way).
* **Timers.** A sweep every ``sweep_interval_seconds`` (settle expired
  dispatches and missed signals, intake of missed burials, clean-up of
  gone servers, stale shapes, then a full pass); the epoch's heartbeat
  every :data:`.leader.HEARTBEAT_SECONDS`; a standby tries the election
  every :data:`.leader.ELECTION_SECONDS`.
* **Leadership.** Only the elected copy listens (in
  ``listener_pool``, whose queue keeps events across a failover) and
  dispatches; once elected it starts with a sweep. A copy whose renewal
  fails (deposed) stops its listener, forgets what it held in memory and
  stands by again; without a coordination URL there is nothing to stand
  by for, and it stops (:attr:`PendingService.deposed`).

Time is a monotonic clock given to the service, so tests drive
:meth:`PendingService.tick` with a fake one and no thread.
"""

import bisect
import collections
import threading
import time

from oslo_log import log as logging

from nova_cell0_rebuild import exception
from nova_cell0_rebuild.pending import events
from nova_cell0_rebuild.pending import leader

LOG = logging.getLogger(__name__)


class PassSchedule(object):
    """When passes are due (monotonic seconds); coalesces requests.

    :param window: a request for a pass at *at* is covered by a pass
        already due in ``[at - window, at]``.
    """

    def __init__(self, window):
        self.window = window
        self._due = []

    def request(self, at):
        """Ask for a pass at *at*; True if that adds one."""
        index = bisect.bisect_right(self._due, at)
        if index and self._due[index - 1] >= at - self.window:
            return False
        self._due.insert(index, at)
        return True

    def next_due(self):
        return self._due[0] if self._due else None

    def take(self, now):
        """Whether a pass is due at *now*; the requests it covers go."""
        index = bisect.bisect_right(self._due, now)
        del self._due[:index]
        return index > 0

    def clear(self):
        del self._due[:]

    def __len__(self):
        return len(self._due)


class PendingService(object):
    """One copy of nova-cell0-rebuild-pending.

    :param conf: the ConfigOpts with the plugin's options.
    :param dispatcher: a :class:`.dispatcher.Dispatcher` (its fence is
        ``leadership.renew``).
    :param leadership: a :class:`.leader.Leadership`, started.
    :param listener_factory: called with the endpoint when this copy is
        elected; returns a listener with ``start()`` and ``stop()`` (a
        ``relay.listener.Relay``). None: no listener (tests feed the
        endpoint).
    :param clock: monotonic seconds.
    """

    def __init__(self, conf, dispatcher, leadership, listener_factory=None,
                 clock=time.monotonic):
        self.conf = conf
        self.dispatcher = dispatcher
        self.leadership = leadership
        self.endpoint = events.PendingEndpoint(self)
        self._listener_factory = listener_factory
        self._listener = None
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._inbox = collections.deque()
        self._schedule = PassSchedule(self.options.event_delay_seconds)
        self._next_election = clock()
        self._next_beat = None
        self._next_sweep = None
        self._pass_failures = 0
        #: True once deposed without a coordination URL: the copy stops.
        self.deposed = False
        #: Passes and sweeps run (for logs and tests).
        self.passes = 0
        self.sweeps = 0

    @property
    def options(self):
        return self.conf.cell0_rebuild_pending

    @property
    def leading(self):
        return self.leadership.leading

    # Called from the listener's threads (through the endpoint).

    def in_flight(self):
        """The dispatcher's in-flight dict, for membership tests only: a
        test is atomic, while copying it from the listener's thread could
        meet the worker changing it.
        """
        return self.dispatcher.in_flight

    def hint(self, hint):
        """Queue what a notification asks; the worker does it."""
        if not self.leading:
            return  # handed in while the listener stopped
        now = self._clock()
        with self._lock:
            if (hint.burial is not None or hint.settle is not None
                    or hint.opened is not None):
                self._inbox.append(hint)
            if hint.freed or hint.opened:
                self._schedule.request(now + self.options.event_delay_seconds)
            if hint.freed == 'late':
                self._schedule.request(
                    now + self.options.late_event_recheck_seconds)
        self._wake.set()

    # The worker.

    def tick(self):
        """Do what is due now.

        :returns: seconds until something else is due.
        """
        now = self._clock()
        if not self.leading:
            if now < self._next_election or not self._elect(now):
                return max(0.0, self._next_election - now)
        if now >= self._next_beat and not self._beat(now):
            return max(0.0, self._next_election - now)
        self._work_inbox()
        with self._lock:
            due = self._schedule.take(now)
        if now >= self._next_sweep:
            self._sweep()
            self._next_sweep = now + self.options.sweep_interval_seconds
        elif due:
            self._pass()
        if not self.leading:
            # The fence failed during the pass: deposed.
            self._lost(now)
            return max(0.0, self._next_election - now)
        return self._until_next()

    def _until_next(self):
        with self._lock:
            due = self._schedule.next_due()
        moments = [self._next_beat, self._next_sweep]
        if due is not None:
            moments.append(due)
        return max(0.0, min(moments) - self._clock())

    def _elect(self, now):
        """Try to lead; the elected copy listens and sweeps at once."""
        self._next_election = now + leader.ELECTION_SECONDS
        try:
            epoch = self.leadership.elect()
        except leader.AnotherCopyRuns:
            raise
        except Exception:
            LOG.exception('Election of the pending dispatcher failed: '
                          'tried again in %d s', leader.ELECTION_SECONDS)
            return False
        if epoch is None:
            return False
        self._next_beat = now + leader.HEARTBEAT_SECONDS
        self._next_sweep = now
        self._start_listener()
        return True

    def _beat(self, now):
        """Renew the epoch's heartbeat; False once deposed."""
        try:
            renewed = self.leadership.renew()
        except Exception:
            # The database may be away; nothing can be dispatched then
            # either. Tried again soon; if it stays away, another copy
            # takes over and this one is deposed when it comes back.
            LOG.exception('Heartbeat of the pending dispatcher failed: '
                          'tried again in %d s', leader.ELECTION_SECONDS)
            self._next_beat = now + leader.ELECTION_SECONDS
            return True
        if not renewed:
            self._lost(now)
            return False
        self._next_beat = now + leader.HEARTBEAT_SECONDS
        return True

    def _lost(self, now):
        """Deposed: stop listening, forget, stand by (or stop)."""
        LOG.warning('This copy no longer dispatches waits for room: it '
                    'stands by')
        self._stop_listener()
        with self._lock:
            self._inbox.clear()
            self._schedule.clear()
        self.dispatcher.in_flight.clear()
        self._next_election = now + leader.ELECTION_SECONDS
        if not self.leadership.url:
            LOG.error('Another copy of nova-cell0-rebuild-pending took '
                      'over and [cell0_rebuild_pending] coordination_url '
                      'is not set: this copy stops')
            self.deposed = True
            self.stop()

    def _start_listener(self):
        if self._listener_factory is not None and self._listener is None:
            self._listener = self._listener_factory(self.endpoint)
            self._listener.start()

    def _stop_listener(self):
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.stop()
            except Exception:
                LOG.exception('The pending service\'s listener did not '
                              'stop cleanly')

    def _work_inbox(self):
        """Burials and settle signals, in the order they came."""
        while True:
            with self._lock:
                if not self._inbox:
                    return
                hint = self._inbox.popleft()
            try:
                if hint.burial is not None:
                    self.dispatcher.intake(None, hint.burial)
                if hint.settle is not None:
                    self._settle(*hint.settle)
                if hint.opened is not None:
                    self.dispatcher.shape_opened(None, hint.opened)
            except Exception:
                LOG.exception('%r not handled: left to the sweep', hint)

    def _settle(self, uuid, signal):
        """Settle a server we dispatched; if it held the reservation,
        the passes held back for it may go on: one is due now.
        """
        held_for_it = (self.dispatcher.holder_in_flight
                       and self.dispatcher.reservation.holder == uuid)
        self.dispatcher.settle(None, uuid, signal)
        if held_for_it:
            with self._lock:
                self._schedule.request(
                    self._clock() + self.options.event_delay_seconds)

    def _pass(self):
        """One pass; placement away: try again after a back-off."""
        self.passes += 1
        try:
            self.dispatcher.run_pass()
        except exception.PlacementUnavailable as exc:
            self._pass_failures += 1
            delay = min(self.options.backoff_initial_seconds *
                        2 ** (self._pass_failures - 1),
                        self.options.backoff_max_seconds)
            LOG.warning('Pending pass not run: %s; tried again in %.1f s',
                        exc, delay)
            with self._lock:
                self._schedule.request(self._clock() + delay)
            return
        except Exception:
            LOG.exception('Pending pass failed: tried again at the next '
                          'event or sweep')
        self._pass_failures = 0

    #: Seconds the worker pauses after a fault of its own.
    FAULT_PAUSE = leader.ELECTION_SECONDS

    #: The sweep's steps, in order, before its pass.
    SWEEP_STEPS = ('settle_in_flight', 'settle_expired', 'sweep_gone',
                   'sweep_intake', 'refresh_shapes')

    def _sweep(self):
        """Each step on its own: one failing does not skip the others.

        The heartbeat is renewed between steps when due: on a large cloud
        a sweep (pages of cell0, Neutron and Cyborg asked per shape) may
        outlast :data:`leader.STALE_SECONDS`, after which the status
        check warns and, without a coordination URL, a copy on another
        host would take over a dispatcher that is alive.
        """
        self.sweeps += 1
        for step in self.SWEEP_STEPS:
            try:
                getattr(self.dispatcher, step)()
            except Exception:
                LOG.exception('Pending sweep: %s failed', step)
            now = self._clock()
            if now >= self._next_beat and not self._beat(now):
                return
        self._pass()

    # Life.

    def start(self):
        """Try the first election (synchronously, so that a copy that
        cannot even try refuses to start).

        :raises: AnotherCopyRuns; whatever the backend raises.
        """
        now = self._clock()
        epoch = self.leadership.elect()
        self._next_election = now + leader.ELECTION_SECONDS
        if epoch is not None:
            self._next_beat = now + leader.HEARTBEAT_SECONDS
            self._next_sweep = now
            self._start_listener()
        else:
            LOG.info('Another copy dispatches: this copy stands by')

    def run(self):
        """The worker loop, until :meth:`stop`; then step down."""
        try:
            while not self._stopping.is_set():
                try:
                    timeout = self.tick()
                except leader.AnotherCopyRuns as exc:
                    LOG.error('%s', exc)
                    self.deposed = True
                    break
                except Exception:
                    # A fault of ours must not end the service quietly:
                    # said, and tried again after a pause.
                    LOG.exception('The pending service\'s worker failed: '
                                  'tried again in %d s', self.FAULT_PAUSE)
                    timeout = self.FAULT_PAUSE
                self._wake.wait(timeout)
                self._wake.clear()
        finally:
            self._stop_listener()
            self.leadership.stop()

    def stop(self):
        """Ask the worker loop to end (from any thread)."""
        self._stopping.set()
        self._wake.set()

    @property
    def stopping(self):
        return self._stopping.is_set()
