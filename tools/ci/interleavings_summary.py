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

"""Sum the interleaving explorer's results into one line.

Each test of nova_cell0_rebuild/tests/interleavings writes a JSON file
(its schedules, its violations, its timings) into a directory; this prints
exactly one line::

    explored N schedules, V violations

With ``--kinds`` it then prints, on stderr, the violations by kind with one
schedule to replay for each. Exits 1 when there is a violation, when no
schedule was explored, or when fewer tests wrote results than ``--tests``
says ran (a test that crashed before it wrote any).
"""

import argparse
import collections
import glob
import json
import os
import sys


def load(directory):
    """Every test's results in *directory*."""
    results = []
    for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
        with open(path) as result:
            results.append(json.load(result))
    return results


def summary(results):
    schedules = sum(r['schedules'] for r in results)
    violations = sum(len(r['violations']) for r in results)
    return schedules, violations


def by_kind(results):
    kinds = collections.OrderedDict()
    for result in results:
        for violation in result['violations']:
            kinds.setdefault(violation['kind'], []).append(violation)
    return kinds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('directory')
    parser.add_argument('--kinds', action='store_true',
                        help='Also print the violations by kind (stderr).')
    parser.add_argument('--tests', type=int, default=0,
                        help='How many tests must have written results.')
    args = parser.parse_args(argv)
    results = load(args.directory)
    schedules, violations = summary(results)
    print('explored %d schedules, %d violations' % (schedules, violations))
    if args.kinds:
        for kind, found in sorted(by_kind(results).items()):
            sys.stderr.write('%5d %s, e.g. %s\n' % (len(found), kind,
                                                    found[0]['spec']))
    if violations or not schedules or len(results) < args.tests:
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
