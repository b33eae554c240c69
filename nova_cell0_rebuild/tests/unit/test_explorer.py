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

"""The interleaving explorer's engine (tests/explorer.py), without Nova."""

import importlib.util
import io
import itertools
import json
import os

import fixtures
from oslotest import base

from nova_cell0_rebuild.tests import explorer


class _World(object):
    """Actors that append to a shared log at each of their steps.

    :param steps: {actor name: number of step points it passes}.
    :param quiet: actor names whose segments change nothing (they only
        read the log), so the explorer may prune their reorderings.
    """

    def __init__(self, steps, quiet=()):
        self.engine = explorer.Explorer(watchdog=5)
        self.steps = steps
        self.quiet = set(quiet)
        self.log = []
        self.finals = []

    def _actor(self, name):
        def run():
            for i in range(self.steps[name]):
                self._segment(name, i)
                self.engine.step('%s-%d' % (name, i))
            self._segment(name, 'end')
            return name
        return explorer.Actor(name, run)

    def _segment(self, name, i):
        if name in self.quiet:
            return
        self.engine.quiet(False)
        self.log.append('%s%s' % (name, i))

    def actors(self):
        return [self._actor(name) for name in sorted(self.steps)]

    def run(self, prefix=(), chooser=None):
        self.log = []
        run = self.engine.run(self.actors(), prefix, chooser,
                              track_quiet=bool(self.quiet))
        self.finals.append(tuple(self.log))
        return run

    def explore(self, prune=True):
        return list(explorer.explore(self.run, prune=prune))


class CountTest(base.BaseTestCase):
    """Every interleaving, once: C(a + b, a) for a and b segments."""

    def test_binomial_for_pairs(self):
        for a, b in itertools.product(range(4), repeat=2):
            world = _World({'a': a, 'b': b})
            runs = world.explore()
            # n step points make n + 1 segments.
            expected = explorer.count_schedules([a + 1, b + 1])
            self.assertEqual(expected, len(runs), (a, b))
            self.assertEqual(expected, len(set(world.finals)), (a, b))
            self.assertEqual(expected,
                             len(set(tuple(r.choices) for r in runs)))

    def test_multinomial_for_triples(self):
        world = _World({'a': 1, 'b': 2, 'c': 1})
        runs = world.explore()
        self.assertEqual(explorer.count_schedules([2, 3, 2]), len(runs))
        self.assertEqual(210, len(runs))
        self.assertEqual(210, len(set(world.finals)))

    def test_known_values(self):
        self.assertEqual(6, explorer.count_schedules([2, 2]))
        self.assertEqual(20, explorer.count_schedules([3, 3]))
        self.assertEqual(1, explorer.count_schedules([5]))

    def test_each_run_releases_every_segment(self):
        world = _World({'a': 2, 'b': 1})
        for run in world.explore():
            self.assertEqual(3, run.choices.count(0))
            self.assertEqual(2, run.choices.count(1))
            self.assertEqual({'a': 'a', 'b': 'b'}, run.results)


class ReplayTest(base.BaseTestCase):
    """A schedule's one-line spec replays it exactly."""

    def test_spec_round_trip_and_replay(self):
        world = _World({'a': 2, 'b': 2})
        runs = world.explore()
        for run, final in zip(runs, list(world.finals)):
            names, choices = explorer.parse_spec(run.spec)
            self.assertEqual(['a', 'b'], names)
            again = world.run(choices)
            self.assertEqual(run.choices, again.choices)
            self.assertEqual(run.steps, again.steps)
            self.assertEqual(final, world.finals[-1])

    def test_spec_format(self):
        world = _World({'a': 1, 'b': 0})
        run = world.run([1, 0, 0])
        self.assertEqual('a,b:1,0,0', run.spec)
        self.assertEqual(['bend', 'a0', 'aend'], list(world.finals[-1]))
        self.assertEqual([('b', 'start'), ('a', 'start'), ('a', 'a-0')],
                         run.steps)

    def test_replay_of_an_impossible_schedule_diverges(self):
        world = _World({'a': 0, 'b': 0})
        self.assertRaises(explorer.Diverged, world.run, [0, 0])

    def test_a_short_prefix_goes_on_with_the_lowest_index(self):
        world = _World({'a': 1, 'b': 1})
        self.assertEqual([1, 0, 0, 1], world.run([1]).choices)

    def test_actor_errors_are_recorded_not_raised(self):
        engine = explorer.Explorer(watchdog=5)

        def boom():
            engine.step('before')
            raise ValueError('boom')
        run = engine.run([explorer.Actor('x', boom)])
        self.assertIsInstance(run.errors['x'], ValueError)

    def test_steps_outside_a_run_pass_through(self):
        engine = explorer.Explorer(watchdog=5)
        engine.step('nothing runs')
        self.assertFalse(engine.active)

    def test_an_actor_runs_through_the_step_points_it_passes(self):
        engine = explorer.Explorer(watchdog=5)

        def through(name, passes):
            def run():
                for point in ('p', 'q', 'p'):
                    engine.step(point)
            return explorer.Actor(name, run, passes=passes)
        actors = [through('a', ()), through('b', ('p',))]
        runs = list(explorer.explore(lambda prefix, chooser: engine.run(
            actors, prefix, chooser)))
        # a: 4 segments, b: 2 (it stops at q only): C(6, 2).
        self.assertEqual(15, len(runs))
        self.assertEqual({'start', 'q'}, {at for name, at in runs[0].steps
                                          if name == 'b'})

    def test_seeded_choices_are_reproducible(self):
        world = _World({'a': 2, 'b': 2, 'c': 1})
        first = world.run(chooser=explorer.random_chooser(7)).choices
        second = world.run(chooser=explorer.random_chooser(7)).choices
        self.assertEqual(first, second)
        self.assertEqual(explorer.sample_triples('abcde', 4, 3),
                         explorer.sample_triples('edcba', 4, 3))


class PruningTest(base.BaseTestCase):
    """Reorderings of quiet segments only are run once."""

    def test_two_quiet_actors_run_once(self):
        world = _World({'a': 2, 'b': 2}, quiet=['a', 'b'])
        runs = world.explore()
        # Sleep sets alone (no persistent sets) still run a few orders
        # whose tails were all asleep; far fewer than all.
        self.assertEqual(4, len(runs))
        self.assertEqual(20, len(world.explore(prune=False)))

    def test_a_quiet_actor_against_a_writer(self):
        # Every final log of the unpruned exploration is still reached.
        world = _World({'a': 2, 'b': 2}, quiet=['a'])
        pruned = world.explore()
        reached = set(world.finals)
        world.finals = []
        full = world.explore(prune=False)
        self.assertEqual(set(world.finals), reached)
        self.assertLessEqual(len(pruned), len(full))

    def test_writers_are_never_pruned(self):
        world = _World({'a': 2, 'b': 1}, quiet=[])
        self.assertEqual(10, len(world.explore()))

    def test_pruned_exploration_still_finds_every_outcome(self):
        # One writer, one reader that records what it saw: each place the
        # read can fall at gives its own outcome, none is lost to pruning.
        engine = explorer.Explorer(watchdog=5)
        state = {'x': 0, 'seen': None}

        def writer():
            for _ in range(3):
                engine.quiet(False)
                state['x'] += 1
                engine.step('wrote')

        def reader():
            engine.step('before read')
            state['seen'] = state['x']
            engine.step('after read')

        outcomes = set()

        def run(prefix, chooser):
            state.update(x=0, seen=None)
            result = engine.run([explorer.Actor('w', writer),
                                 explorer.Actor('r', reader)],
                                prefix, chooser, track_quiet=True)
            outcomes.add(state['seen'])
            return result
        runs = list(explorer.explore(run))
        self.assertEqual({0, 1, 2, 3}, outcomes)
        self.assertLess(len(runs), explorer.count_schedules([4, 3]))


class SummaryTest(base.BaseTestCase):
    """tools/ci/interleavings_summary.py: one line, rc 1 on a violation."""

    def _summary(self):
        path = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                            'tools', 'ci', 'interleavings_summary.py')
        spec = importlib.util.spec_from_file_location('summary', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def _run(self, results, *args):
        directory = self.useFixture(fixtures.TempDir()).path
        for i, result in enumerate(results):
            with open(os.path.join(directory, '%d.json' % i), 'w') as out:
                json.dump(result, out)
        stdout = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', stdout.stream))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        rc = self._summary().main([directory] + list(args))
        stdout.stream.seek(0)
        return rc, stdout.stream.read()

    def test_one_line_and_its_counts(self):
        violation = {'kind': 'lost', 'spec': 'a,b:0,1', 'detail': 'x'}
        rc, out = self._run([
            {'schedules': 10, 'violations': []},
            {'schedules': 5, 'violations': [violation, violation]}],
            '--kinds')
        self.assertEqual('explored 15 schedules, 2 violations\n', out)
        self.assertEqual(1, rc)

    def test_clean_run(self):
        rc, out = self._run([{'schedules': 3, 'violations': []}])
        self.assertEqual('explored 3 schedules, 0 violations\n', out)
        self.assertEqual(0, rc)

    def test_missing_results_fail(self):
        rc, _ = self._run([{'schedules': 3, 'violations': []}],
                          '--tests', '2')
        self.assertEqual(1, rc)
        self.assertEqual(1, self._run([])[0])
