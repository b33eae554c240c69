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

"""Every interleaving of every pair of actors, on real Nova 34.

The pairs are spread over test classes of about equal cost (each class
sets Nova up once and explores its pairs one schedule after another), so
that ``stestr --concurrency 2`` keeps both workers busy. A failure lists
each kind of violation with one schedule to replay (see test_found.py).
"""

import itertools

from nova_cell0_rebuild.tests.interleavings import actors
from nova_cell0_rebuild.tests.interleavings import harness

#: How many classes the pairs are spread over: two per stestr worker
#: (stestr hands tests it has no times for round-robin to its workers, so
#: classes of equal cost keep both busy to the end). Four, not two, so
#: that each test stays far below OS_TEST_TIMEOUT on a slow or busy
#: machine (each one sets Nova up once: about two seconds).
CLASSES = 4

#: Schedules of a rebuild paired with each actor, as measured on main
#: (only used to balance the classes; a pair not listed counts 12).
WITH_A_REBUILD = {'purge': 340, 'delete': 130, 'heal_a': 75, 'heal_b': 75,
                  'rebuild_a': 45, 'rebuild_b': 45, 'drop': 40,
                  'heal_late': 40}

PAIRS = list(itertools.combinations(actors.ACTORS, 2))


def _cost(pair):
    """About how long a pair takes, in schedules.

    The checks after a delete count extra: archive and purge run then.
    """
    a, b = pair
    if a.startswith('rebuild_'):
        return WITH_A_REBUILD.get(b, 12)
    if b.startswith('rebuild_'):
        return WITH_A_REBUILD.get(a, 12)
    return 16 if {'delete', 'purge'} <= set(pair) else 5


globals().update(harness.pair_classes(
    __name__, 'Pairs%02dTest', PAIRS, CLASSES, _cost))
