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

"""A deterministic interleaving explorer: every order of a few actors.

Actors are callables, each run in its own thread (a greenthread once
eventlet patched ``threading``). An actor stops at *step points*: calls of
:meth:`Explorer.step`, which the tests put before (and after) the
functions they wrap. Exactly one actor runs at any moment; the others wait
on an event at their last step point, or before they start. A *schedule*
is the order in which the paused actors are released, one release per
segment (from one step point to the next, or to the actor's end). No
sleep decides anything: a release is an event, and the explorer waits for
the released actor to reach its next step point or to end.

:func:`explore` enumerates every schedule of a set of actors by depth-first
search over the choices at the step points, replaying each schedule from
scratch (the caller resets the world before each run). Two actors of a
and b segments give C(a + b, a) schedules.

Pruning: a segment that changed nothing another actor can see (the caller
says so with :meth:`Explorer.quiet`, e.g. from a counter of the database
writes it issued) commutes with the segment of another actor that follows
it when that one is quiet too; of two schedules that differ only by the
order of two adjacent quiet segments, only one is run (a sleep set, as in
Godefroid's partial-order reduction). Nothing is pruned unless the caller
says segments are quiet.

A schedule is written as one line, ``actor,actor:choices``, the actors'
names and the index of the actor released at each step, e.g.
``rebuild_a,heal_a:0,0,1,1,0``. :func:`parse_spec` reads it back and
:meth:`Explorer.run` replays it exactly (a replay that would release an
actor that is not paused raises :class:`Diverged`).

Step points reached by a thread that is not an actor (the conductor's
service thread, say, while an actor waits for its RPC answer) belong to
the actor that runs at that moment: only one does.
"""

import itertools
import random
import threading

#: How long a released actor may take to reach its next step point before
#: the run is declared stuck (a deadlock between actors): a watchdog, not
#: a pause; a healthy segment takes milliseconds.
WATCHDOG_SECONDS = 60


class Diverged(Exception):
    """A replayed schedule chose an actor that is not paused there."""


class Stuck(Exception):
    """A released actor neither reached a step point nor ended in time."""


class Actor(object):
    """One actor of a run: a name and the callable it runs.

    :param passes: names of step points this actor runs through without
        stopping (its steps there are explored with another actor's).
    """

    def __init__(self, name, run, passes=frozenset()):
        self.name = name
        self.run = run
        self.passes = frozenset(passes)


class _Running(object):
    """An actor's state within one run."""

    def __init__(self, index, actor):
        self.index = index
        self.actor = actor
        self.go = threading.Event()
        self.parked = threading.Event()
        self.at = 'start'
        self.done = False
        self.result = None
        self.error = None
        self.thread = None


class Run(object):
    """What one schedule did.

    :ivar choices: the index of the actor released at each step.
    :ivar enabled: the indices that could have been released at each step.
    :ivar steps: (actor name, step point) of each release, in order.
    :ivar quiet: whether each segment changed nothing visible (see
        :meth:`Explorer.quiet`).
    :ivar results: each actor's return value, by name.
    :ivar errors: each actor's exception (or None), by name.
    """

    def __init__(self, names):
        self.names = list(names)
        self.choices = []
        self.enabled = []
        self.steps = []
        self.quiet = []
        self.results = {}
        self.errors = {}

    @property
    def spec(self):
        return format_spec(self.names, self.choices)

    def describe(self):
        """The schedule, one release a line, for a failure message."""
        return '\n'.join('  %2d. %s @ %s' % (i, name, step)
                         for i, (name, step) in enumerate(self.steps))


def format_spec(names, choices):
    """``actor,actor:choice,choice``: a schedule on one line."""
    return '%s:%s' % (','.join(names), ','.join(str(c) for c in choices))


def parse_spec(spec):
    """(names, choices) from a line :func:`format_spec` wrote."""
    names, _, choices = spec.strip().partition(':')
    return (names.split(','),
            [int(c) for c in choices.split(',') if c.strip()])


class Explorer(object):
    """Runs actors one segment at a time, in a chosen order."""

    def __init__(self, watchdog=WATCHDOG_SECONDS):
        self.watchdog = watchdog
        self._lock = threading.Lock()
        self._running = None
        self._actors = None
        self._quiet = True

    # The hook -------------------------------------------------------------

    def step(self, name):
        """A step point: the running actor stops here until released.

        Outside a run, or from a thread while no actor runs (set-up and
        invariant checks), it does nothing.
        """
        with self._lock:
            current = self._running
        if current is None or name in current.actor.passes:
            return
        current.at = name
        go = current.go
        go.clear()
        current.parked.set()
        go.wait()

    def quiet(self, is_quiet):
        """Tell the explorer whether the segment running now is quiet.

        Called with False as soon as the segment changes anything another
        actor may see (a database write, an RPC cast); segments are
        assumed to change something unless the caller keeps a counter and
        says otherwise (see :attr:`Run.quiet`).
        """
        if not is_quiet:
            self._quiet = False

    @property
    def active(self):
        return self._actors is not None

    # Running one schedule ---------------------------------------------------

    def _body(self, running):
        running.parked.set()  # paused before it starts
        running.go.wait()
        try:
            running.result = running.actor.run()
        except BaseException as exc:  # an actor's end, recorded as such
            running.error = exc
        finally:
            running.done = True
            running.parked.set()

    def _release(self, running, quiet_known):
        running.parked.clear()
        self._quiet = quiet_known
        with self._lock:
            self._running = running
        running.go.set()
        if not running.parked.wait(self.watchdog):
            raise Stuck('%s did not reach a step point after %s within '
                        '%ss' % (running.actor.name, running.at,
                                 self.watchdog))
        with self._lock:
            self._running = None
        return self._quiet

    def run(self, actors, choices=(), chooser=None, track_quiet=False):
        """Run *actors* once, releasing them in the order of *choices*.

        Past the end of *choices*, *chooser(enabled, run)* picks (by
        default the lowest index that is paused).

        :param track_quiet: whether the caller reports quiet segments
            (then a segment counts as quiet until :meth:`quiet` says no).
        :returns: a :class:`Run`.
        :raises: Diverged, Stuck.
        """
        run = Run(a.name for a in actors)
        states = [_Running(i, a) for i, a in enumerate(actors)]
        self._actors = states
        try:
            for state in states:
                state.thread = threading.Thread(
                    target=self._body, args=(state,),
                    name='actor-%s' % state.actor.name, daemon=True)
                state.thread.start()
                state.parked.wait()
            while True:
                enabled = [s.index for s in states if not s.done]
                if not enabled:
                    break
                position = len(run.choices)
                if position < len(choices):
                    chosen = choices[position]
                    if chosen not in enabled:
                        raise Diverged(
                            'step %d of %s releases %s, which is not paused'
                            ' there (paused: %s)' % (
                                position, format_spec(run.names, choices),
                                run.names[chosen] if chosen < len(
                                    run.names) else chosen,
                                [run.names[i] for i in enabled]))
                elif chooser is not None:
                    chosen = chooser(enabled, run)
                else:
                    chosen = min(enabled)
                state = states[chosen]
                run.choices.append(chosen)
                run.enabled.append(enabled)
                run.steps.append((state.actor.name, state.at))
                run.quiet.append(self._release(state, track_quiet))
        finally:
            self._actors = None
            self._running = None
            for state in states:
                if not state.done:
                    # A stuck or abandoned run: let everyone finish alone.
                    state.go.set()
        for state in states:
            state.thread.join(self.watchdog)
            run.results[state.actor.name] = state.result
            run.errors[state.actor.name] = state.error
        return run


class _SleepSets(object):
    """Chooses past a prefix, and keeps the sleep set of each position.

    An actor asleep at a position is not released there: releasing it
    first would only swap its quiet segment with quiet segments already
    run in an order that was explored. It stays asleep while only quiet
    segments run, and wakes when any other segment (or its own) runs.
    """

    def __init__(self, prefix, asleep):
        self.prefix = prefix
        self.asleep = asleep  # the sleep set where the prefix's last ran
        self.sleep = {}

    def _at(self, run, position):
        if position in self.sleep:
            return self.sleep[position]
        if position < len(self.prefix):
            return {}
        if position == 0:
            previous = {}
        elif position == len(self.prefix):
            previous = self.asleep
        else:
            previous = self._at(run, position - 1)
        last = run.choices[position - 1] if position else None
        still = dict((actor, quiet) for actor, quiet in previous.items()
                     if quiet and run.quiet[position - 1] and actor != last)
        self.sleep[position] = still
        return still

    def __call__(self, enabled, run):
        asleep = self._at(run, len(run.choices))
        awake = [i for i in enabled if i not in asleep]
        # All asleep: this tail repeats explored orders, but the actors
        # must end; run it as it comes.
        return min(awake or enabled)


def explore(run_schedule, prune=True):
    """Every schedule, depth first, each replayed from scratch.

    :param run_schedule: ``run_schedule(prefix, chooser)`` resets the
        world and runs the actors with :meth:`Explorer.run`, replaying the
        list of choices *prefix* and letting *chooser* pick past it;
        returns the :class:`Run`.
    :param prune: use the quiet segments the runs report (sleep sets): two
        schedules that differ only by the order of adjacent quiet segments
        of different actors are run once. Without quiet segments reported,
        nothing is pruned.
    :returns: an iterator of Runs, one per schedule run.
    """
    stack = [([], {})]
    while stack:
        prefix, asleep = stack.pop()
        chooser = _SleepSets(prefix, asleep if prune else {})
        run = run_schedule(prefix, chooser)
        yield run
        pushes = []
        for i in range(len(prefix), len(run.choices)):
            chosen = run.choices[i]
            sleep = chooser._at(run, i) if prune else {}
            siblings = dict(sleep)
            siblings[chosen] = run.quiet[i]
            for alternative in run.enabled[i]:
                if alternative == chosen or alternative in sleep:
                    continue
                pushes.append((run.choices[:i] + [alternative],
                               dict(siblings)))
                # Not run yet from here: whether it is quiet is unknown.
                siblings[alternative] = False
        stack.extend(reversed(pushes))


def count_schedules(segments):
    """How many schedules actors of these segment counts have (no pruning).

    The multinomial coefficient: (sum)! / prod(n!).
    """
    total = 1
    placed = 0
    for n in segments:
        placed += n
        total *= _binomial(placed, n)
    return total


def _binomial(n, k):
    result = 1
    for i in range(1, k + 1):
        result = result * (n - k + i) // i
    return result


def sample_triples(names, how_many, seed):
    """A seeded sample of *how_many* triples of distinct actor names."""
    triples = list(itertools.combinations(sorted(names), 3))
    rng = random.Random(seed)
    rng.shuffle(triples)
    return triples[:how_many]


def random_chooser(seed):
    """A chooser for :meth:`Explorer.run` that picks at random, seeded."""
    rng = random.Random(seed)
    return lambda enabled, run: rng.choice(enabled)
