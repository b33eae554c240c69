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

"""Sum the stestr runs of a CI job into one "N passed, N failed" line.

Run with the Python of a tox env that has stestr (and so python-subunit),
from the repository root::

    .tox/py3/bin/python tools/ci/summarise_stestr.py --first 0

``--also DIR`` adds every run of the stestr repository in DIR/.stestr (a
job that ran beside the others keeps its own: two stestr runs at once in
one repository would race for the run ids).

Prints each failed test with the last lines of its traceback (a job
that ran in the background may have its log far above, out of sight),
one line per run, then ``N passed, N failed, N skipped``. An
expected failure counts as passed; a failure, an error, an unexpected
success and a test that never finished (a crashed worker) count as failed;
a run that cannot be read, or holds no test, counts as one failure.
Exits 1 if anything failed or nothing passed.
"""

import argparse
import collections
import io
import os
import subprocess
import sys

import subunit
import testtools


def next_run(repo_url='.'):
    """The id the next stestr run in *repo_url*/.stestr will get."""
    try:
        with open(os.path.join(repo_url, '.stestr', 'next-stream')) as stream:
            return int(stream.read().strip())
    except FileNotFoundError:
        return 0


FAILED = ('fail', 'uxsuccess', 'inprogress', 'exists')
TRACEBACK_LINES = 20


def _last_lines(test):
    """The tail of a failed test's traceback, or of any detail it kept."""
    details = test['details']
    for name in ['traceback'] + sorted(details):
        if name in details:
            text = ''.join(details[name].iter_text()).rstrip()
            if text:
                return text.splitlines()[-TRACEBACK_LINES:]
    return []


def count(run_id, repo_url='.', failures=None):
    """(passed, failed, skipped) of one stestr run.

    Appends (test id, last lines of its traceback) of every failed test
    to *failures* if given.
    """
    stream = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'stestr'),
         '--repo-url', repo_url, 'history', 'show', str(run_id),
         '--subunit'], capture_output=True, check=True).stdout
    counts = collections.Counter()

    def on_test(test):
        counts.update([test['status']])
        if failures is not None and test['status'] in FAILED:
            failures.append((test['id'], _last_lines(test)))

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(
            io.BytesIO(stream), non_subunit_name='stdout').run(result)
    finally:
        result.stopTestRun()
    passed = counts.pop('success', 0) + counts.pop('xfail', 0)
    skipped = counts.pop('skip', 0)
    return passed, sum(counts.values()), skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--first', type=int, default=0,
                        help='the first stestr run of this job')
    parser.add_argument('--also', action='append', default=[],
                        metavar='DIR', help='every run of DIR/.stestr too')
    args = parser.parse_args(argv)
    totals = [0, 0, 0]
    runs = [('.', run_id) for run_id in range(args.first, next_run())]
    for repo_url in args.also:
        runs += [(repo_url, run_id) for run_id in range(next_run(repo_url))]
    if not runs:
        print('no stestr run was recorded')
    lines, failures = [], []
    for repo_url, run_id in runs:
        name = 'stestr run %d%s' % (
            run_id, '' if repo_url == '.' else ' of %s' % repo_url)
        try:
            passed, failed, skipped = count(run_id, repo_url, failures)
        except (subprocess.CalledProcessError, OSError) as exc:
            passed, failed, skipped = 0, 0, 0
            lines.append('%s: could not be read: %s' % (name, exc))
        if passed + failed + skipped == 0:
            lines.append('%s: holds no test' % name)
            failed = 1
        else:
            lines.append('%s: passed=%d failed=%d skipped=%d'
                         % (name, passed, failed, skipped))
        totals = [a + b for a, b in zip(totals, (passed, failed, skipped))]
    for test_id, last_lines in failures:
        print('failed test: %s' % test_id)
        for line in last_lines:
            print('    %s' % line)
    print('\n'.join(lines))
    print('%d passed, %d failed, %d skipped' % tuple(totals))
    return 1 if totals[1] or not totals[0] else 0


if __name__ == '__main__':
    sys.exit(main())
