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

"""B6's arithmetic (``tests/benchstats.py``), without running the bench."""

import math
import statistics

import testtools

from nova_cell0_rebuild.tests import benchstats

OURS = 'service'
THEIRS = 'user'


def _raw(ours, theirs, rebuilds):
    return {'samples': {OURS: {'active': ours, 'order': []},
                        THEIRS: {'active': theirs, 'order': []}},
            'user_rebuild': rebuilds, 'seed': 27, 'period': 30.0,
            'phases': [1.25, 29.0], 'seconds': 41.5}


class PercentileTest(testtools.TestCase):

    def test_interpolates_between_the_nearest_ranks(self):
        # 0.95 * (5 - 1) = 3.8: 80 % of the way from 4th (40) to 5th (50).
        self.assertAlmostEqual(48.0, benchstats.percentile(
            [50, 10, 40, 20, 30], 0.95))

    def test_agrees_with_the_inclusive_quantiles_of_the_stdlib(self):
        values = [0.3 * i ** 1.5 for i in range(25)]
        cuts = statistics.quantiles(values, n=20, method='inclusive')
        self.assertAlmostEqual(cuts[18], benchstats.percentile(values, 0.95))
        self.assertAlmostEqual(statistics.median(values),
                               benchstats.percentile(values, 0.5))

    def test_ends_and_small_samples(self):
        self.assertEqual(7.0, benchstats.percentile([7.0], 0.95))
        self.assertEqual(1, benchstats.percentile([3, 1, 2], 0.0))
        self.assertEqual(3, benchstats.percentile([3, 1, 2], 1.0))
        self.assertTrue(math.isnan(benchstats.percentile([], 0.95)))


class PhasesTest(testtools.TestCase):

    def test_seeded_and_within_the_period(self):
        drawn = benchstats.phases(27, 200, 30.0)
        self.assertEqual(drawn, benchstats.phases(27, 200, 30.0))
        self.assertNotEqual(drawn, benchstats.phases(28, 200, 30.0))
        self.assertEqual(200, len(drawn))
        self.assertTrue(all(0.0 <= phase < 30.0 for phase in drawn))
        # Spread over the period, not bunched: both halves are drawn.
        self.assertTrue(any(phase < 15.0 for phase in drawn))
        self.assertTrue(any(phase >= 15.0 for phase in drawn))

    def test_fewer_rounds_are_a_prefix(self):
        # --b6-runs 3 draws the first three phases of the full run.
        self.assertEqual(benchstats.phases(27, 25, 30.0)[:3],
                         benchstats.phases(27, 3, 30.0))


class SummarizeWaitingTest(testtools.TestCase):

    def test_medians_p95_and_ratios_ours_over_theirs(self):
        summary = benchstats.summarize_waiting(
            _raw([1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 20.0, 30.0, 40.0, 50.0],
                 [0.5, 0.7, 0.6]), OURS, THEIRS)
        ours, theirs = summary['arms'][OURS], summary['arms'][THEIRS]
        self.assertEqual((5, 3.0, 1.0, 5.0),
                         (ours['n'], ours['median'], ours['min'],
                          ours['max']))
        self.assertAlmostEqual(4.8, ours['p95'])
        self.assertAlmostEqual(48.0, theirs['p95'])
        self.assertAlmostEqual(0.1, summary['ratio']['median'])
        self.assertAlmostEqual(0.1, summary['ratio']['p95'])
        self.assertAlmostEqual(0.6, summary['user_rebuild']['median'])
        self.assertEqual((27, 30.0, [1.25, 29.0], 41.5),
                         (summary['seed'], summary['period'],
                          summary['phases'], summary['seconds']))

    def test_no_samples_gives_nan_not_an_error(self):
        summary = benchstats.summarize_waiting(_raw([], [], []), OURS,
                                               THEIRS)
        self.assertTrue(math.isnan(summary['ratio']['median']))
        self.assertIsNone(summary['arms'][OURS]['min'])

    def test_rendered_lines(self):
        summary = benchstats.summarize_waiting(
            _raw([1.0, 2.0], [10.0, 20.0], [0.5]), OURS, THEIRS)
        text = '\n'.join(benchstats.render_waiting(summary, OURS, THEIRS))
        self.assertIn('(2 interleaved rounds)', text)
        lines = text.splitlines()
        # Median, p95, min, max, in the columns of the other B lines.
        self.assertEqual(
            '  %-34s   1500.0 ms   1950.0 ms   1000.0 ms   2000.0 ms'
            % 'pending service, opted in', lines[2])
        self.assertEqual(
            "  %-34s    500.0 ms    500.0 ms    500.0 ms    500.0 ms"
            % "(the user's rebuild alone)", lines[4])
        self.assertIn('ratio service / user', text)
        self.assertIn('0.100 / 0.100', text)
        self.assertIn('seed 27: 1.2 29.0', text)
        self.assertIn('B6 took 41.5 s', text)
