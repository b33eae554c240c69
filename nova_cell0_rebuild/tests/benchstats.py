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

"""The bench's pure arithmetic for B6, apart from ``tests/bench``.

Importing anything under ``tests/bench`` monkey-patches the process for
eventlet and imports Nova's test fixtures (its ``__init__``), which the
unit tests must not; this module imports neither, so that they can test
what ``tests/bench/report.py`` and ``tests/bench/waiting.py`` compute.
"""

import math
import random
import statistics


def phases(seed, rounds, period):
    """The user's wait until their next look, per round: uniform in
    ``[0, period)``, the same for the same seed.
    """
    draw = random.Random(seed)
    return [draw.uniform(0.0, period) for _ in range(rounds)]


def percentile(values, fraction):
    """The *fraction* quantile (0 to 1) of *values*, interpolated between
    the two nearest ranks (``statistics.quantiles``' "inclusive" method:
    never outside the samples, defined from one sample on); NaN when
    there is none.
    """
    if not values:
        return float('nan')
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else float('nan')


def _stats(values):
    return {'n': len(values),
            'median': statistics.median(values) if values else float('nan'),
            'p95': percentile(values, 0.95),
            'min': min(values) if values else None,
            'max': max(values) if values else None}


def summarize_waiting(raw, ours, theirs):
    """B6's medians, p95 and ratios from its raw samples.

    :param raw: what ``tests/bench/waiting.py`` returns: {'samples':
        {arm: {'active': [seconds], ...}}, 'user_rebuild': [seconds],
        'seed', 'period', 'phases', and 'seconds' of the whole B6}.
    :param ours: the service's arm; *theirs*: the user's.
    :returns: {'arms': {arm: {'n', 'median', 'p95', 'min', 'max'}},
        'user_rebuild': the same of the user's rebuilds alone,
        'ratio': {'median': ours / theirs, 'p95': ours / theirs}, and the
        seed, period, phases and seconds of *raw*}.
    """
    arms = {arm: _stats(samples['active'])
            for arm, samples in raw['samples'].items()}
    return {'arms': arms,
            'user_rebuild': _stats(raw['user_rebuild']),
            'ratio': {key: _ratio(arms[ours][key], arms[theirs][key])
                      for key in ('median', 'p95')},
            'seed': raw['seed'], 'period': raw['period'],
            'phases': raw['phases'], 'seconds': raw.get('seconds')}


def _ms(seconds):
    return '%8.1f ms' % (seconds * 1000.0)


def render_waiting(b6, ours, theirs):
    """The printed lines of B6, from :func:`summarize_waiting`."""
    lines = [
        "B6  waiting for room: from the freeing DELETE's answer to ACTIVE "
        '(%d interleaved rounds)' % b6['arms'][ours]['n'],
        '  %-34s %11s %11s %11s %11s' % ('', 'median', 'p95', 'min', 'max')]
    for info, label in ((b6['arms'][ours], 'pending service, opted in'),
                        (b6['arms'][theirs], 'user: next look + rebuild'),
                        (b6['user_rebuild'], "(the user's rebuild alone)")):
        lines.append('  %-34s %s %s %s %s' % (
            label, _ms(info['median']), _ms(info['p95']),
            _ms(info['min']), _ms(info['max'])))
    lines.append('  %-34s %11.3f / %.3f (median / p95; no target)' % (
        'ratio service / user', b6['ratio']['median'], b6['ratio']['p95']))
    lines.append('  user looks every %.0f s; phases drawn with seed %s: %s'
                 % (b6['period'], b6['seed'],
                    ' '.join('%.1f' % phase for phase in b6['phases'])))
    if b6.get('seconds') is not None:
        lines.append('  B6 took %.1f s, set-up included' % b6['seconds'])
    return lines
