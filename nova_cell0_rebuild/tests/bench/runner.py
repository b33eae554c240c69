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

"""Command line of the bench: run it, print the table, write the JSON.

Exit status: 0 when the run completed, whether or not every target was met
(a missed target is printed as MISSED); 1 with ``--strict`` when a target
was missed, and with ``--quick`` when a statement-count target was; 2 when
the run itself failed.
"""

import argparse
import datetime
import json
import logging
import os
import platform
import sqlite3
import subprocess
import sys
import time

from importlib import metadata

import testtools

from nova_cell0_rebuild.tests.bench import harness
from nova_cell0_rebuild.tests.bench import mariadb
from nova_cell0_rebuild.tests.bench import report
from nova_cell0_rebuild.tests.bench import scenarios

MIN_RUNS = 20
#: Where the harness may keep its databases (see ``--databases``).
DATABASES = ('sqlite', 'mariadb')

#: What ``--quick`` runs: every statement-count target at full size, and a
#: latency sample too short to judge a ratio of a few per cent on a shared
#: 2-core machine, so it is printed and does not decide the exit status.
QUICK = dict(runs=3, b3_runs=4, warmup=1, b4_repeats=2, throughput=6,
             b6_runs=3)
#: The targets counted in statements, not timed: they hold on any machine.
STATEMENT_TARGETS = ('B4 equal', 'B4 move')


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m nova_cell0_rebuild.tests.bench',
        description='Rebuild from cell0 against create, side by side, on '
                    "Nova's in-process functional harness.")
    add = parser.add_argument
    add('--runs', type=int, default=25,
        help='interleaved rounds of B1/B2 (default 25; at least %d for a '
             'result worth recording)' % MIN_RUNS)
    add('--b3-runs', type=int, default=40,
        help='interleaved rounds of B3 (default 40)')
    add('--warmup', type=int, default=3,
        help='untimed warm-up rounds (default 3)')
    add('--buried-few', type=int, default=10,
        help='B4: other servers in cell0, first count (default 10)')
    add('--buried-many', type=int, default=10000,
        help='B4: other servers in cell0, second count (default 10000)')
    add('--b4-repeats', type=int, default=5,
        help='B4: operations counted per condition (default 5)')
    add('--throughput', type=int, default=200,
        help='B5: servers rebuilt, and servers created (default 200)')
    add('--b6-runs', type=int, default=25,
        help='interleaved rounds of B6, the waiting server against a user '
             'who looks every 30 s (default 25)')
    add('--b6-seed', type=int, default=27,
        help="B6: seed of the user's phases, drawn per round in [0, 30) "
             's (default 27)')
    add('--computes', type=int, default=10,
        help='fake computes (nova.virt.fake.FakeDriver, default 10): each '
             "build costs Nova one placement GET per server already on "
             'its host, so more hosts keep the run short')
    add('--databases', default='sqlite,mariadb',
        help='where the harness keeps its databases, one whole run each, '
             'in this order: "sqlite" (in memory, as Nova\'s tests) and '
             '"mariadb" (a real server, see --mysql-url); default both')
    add('--mysql-url',
        help='SQLAlchemy URL of a MariaDB server whose user may create and '
             'drop databases (e.g. mysql+pymysql://openstack_citest:'
             'openstack_citest@127.0.0.1/); by default the bench starts a '
             'private mariadbd of its own and stops it at the end')
    add('--output', default=None,
        help='JSON file of the results (default bench-results.json); with '
             '--render, where to write its summaries and tables without '
             'the raw samples, for doc/source/contributor/'
             'bench-results.json')
    add('--strict', action='store_true',
        help='exit 1 when a target is missed')
    add('--quick', action='store_true',
        help='the statement-count targets and a short latency sample '
             '(%s; about 2 minutes): exit 1 when a statement-count '
             'target is missed' % ', '.join(
                 '--%s %d' % (k.replace('_', '-'), v)
                 for k, v in sorted(QUICK.items())))
    add('--profile', metavar='DIR',
        help='sample the stacks of the B1/B2 API calls (rebuild and '
             'create; see profiling.py), write DIR/<arm>.txt and print '
             'them (timings then not comparable)')
    add('--render', metavar='JSON',
        help='print the table of an earlier run from its JSON file, '
             'without running anything')
    add('--no-statements', action='store_true',
        help="do not print B4's statement listings (still in the JSON)")
    return parser


def _read(path):
    try:
        with open(path) as source:
            return source.read()
    except OSError:
        return ''


def _version(distribution):
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return 'not installed'


def _git(*args):
    try:
        return subprocess.run(
            ('git',) + args, capture_output=True, text=True, timeout=10,
            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ''


def machine():
    """Where and on what the bench ran."""
    cpu = next((line.split(':', 1)[1].strip()
                for line in _read('/proc/cpuinfo').splitlines()
                if line.startswith('model name')), platform.processor())
    mem_kb = next((int(line.split()[1])
                   for line in _read('/proc/meminfo').splitlines()
                   if line.startswith('MemTotal:')), 0)
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count()
    versions = {
        'python': platform.python_version(),
        'nova': _version('nova'),
        'sqlalchemy': _version('SQLAlchemy'),
        'eventlet': _version('eventlet'),
        'openstack-placement': _version('openstack-placement'),
    }
    dirty = _git('status', '--porcelain', '--untracked-files=no')
    return {
        'nproc': nproc,
        'cpu': cpu,
        'ram_gib': round(mem_kb / 1024.0 / 1024.0, 1),
        'platform': platform.platform(),
        'versions': versions,
        'git': {'commit': _git('rev-parse', '--short', 'HEAD'),
                'modified_files': len(dirty.splitlines()) if dirty else 0},
        'date': datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%d %H:%M UTC'),
    }


def _print_profiles(samplers, directory):
    os.makedirs(directory, exist_ok=True)
    for arm, sampler in samplers.items():
        sampler.close()
        text = sampler.report(arm)
        name = os.path.join(directory, arm.replace(' ', '_'))
        with open(name + '.txt', 'w') as output:
            output.write(text + '\n')
        with open(name + '.samples.json', 'w') as output:
            json.dump({'windows': sampler.windows,
                       'window_seconds': sampler.window_seconds,
                       'samples': [[n, list(stack)] for stack, n in
                                   sampler.samples.most_common()]}, output)
        print('\n=== profile of the %s API calls (%s.txt) ===' % (arm, name))
        print(text)


def _add_tables(document):
    """Each run's summary and printed tables, and the targets, into
    *document*: what the documentation renders without running Nova.
    """
    meta = document['meta']
    meta['targets'] = {name: list(target)
                       for name, target in report.TARGETS.items()}
    # A JSON written before the bench ran on several databases.
    if 'runs' not in document:
        document['runs'] = [{'database': 'sqlite',
                             'raw': document.pop('raw')}]
        document.pop('summary', None)
    for run in document['runs']:
        summary = report.summarize(run['raw'])
        run['summary'] = summary
        run['table'] = report.render(summary, meta, run)
        run['statements_table'] = report.render_statements(summary)
    return document


def _print_tables(document, options):
    for run in document['runs']:
        print(run['table'])
        if not options.no_statements:
            print('')
            print(run['statements_table'])
        print('')


def _write(document, path):
    with open(path, 'w') as output:
        json.dump(document, output, indent=1, default=str)
        output.write('\n')


def _render_only(options):
    with open(options.render) as source:
        document = _add_tables(json.load(source))
    _print_tables(document, options)
    if options.output_given:
        # What the documentation renders: the raw samples stay in the
        # run's own JSON (several MB), the summaries and tables go on.
        for run in document['runs']:
            run.pop('raw', None)
        _write(document, options.output)
    return 0


def _database_names(options):
    names = [name.strip() for name in options.databases.split(',')
             if name.strip()]
    unknown = sorted(set(names) - set(DATABASES))
    if not names or unknown or len(set(names)) != len(names):
        _parser().error('--databases: a comma-separated list of %s, each '
                        'once (got %r)' % (', '.join(DATABASES),
                                           options.databases))
    return names


def _run(options, database, mysql_url):
    """One whole run of every measurement on *database*."""
    harness.progress('run on %s', database)
    bench = scenarios.Bench(options)
    case = harness.Harness(bench, computes=options.computes,
                           mysql_url=mysql_url)
    result = testtools.TestResult()
    load_before = os.getloadavg()
    started = time.monotonic()
    case.run(result)
    elapsed = time.monotonic() - started
    for _test, trace in result.errors + result.failures:
        sys.stderr.write(trace + '\n')
    if result.errors or result.failures:
        return None, bench
    return {
        'database': database,
        'server': (mariadb.server_version(mysql_url) if mysql_url else
                   'SQLite %s, in memory' % sqlite3.sqlite_version),
        'seconds': round(elapsed, 1),
        'loadavg_before': [round(x, 2) for x in load_before],
        'loadavg_after': [round(x, 2) for x in os.getloadavg()],
        'raw': bench.raw,
    }, bench


def _meta(options):
    meta = machine()
    meta['options'] = vars(options)
    meta['command'] = ' '.join(
        ['python -m nova_cell0_rebuild.tests.bench'] + sys.argv[1:])
    meta['machine_line'] = '%d CPUs (%s), %.1f GiB RAM' % (
        meta['nproc'], meta['cpu'], meta['ram_gib'])
    versions = meta['versions']
    meta['versions_line'] = (
        'Python %(python)s, Nova %(nova)s, SQLAlchemy %(sqlalchemy)s, '
        'eventlet %(eventlet)s' % versions)
    return meta


def _run_all(options, names):
    """{'meta': ..., 'runs': [...]}, or None when a run failed."""
    meta = _meta(options)
    document = {'meta': meta, 'runs': []}
    directory = os.path.dirname(os.path.abspath(options.output))
    os.makedirs(directory, exist_ok=True)
    server = None
    try:
        for name in names:
            mysql_url = None
            if name == 'mariadb':
                mysql_url = options.mysql_url
                if not mysql_url:
                    server = mariadb.PrivateServer().start()
                    mysql_url = server.url
            run, bench = _run(options, name, mysql_url)
            if run is None:
                sys.stderr.write('The bench run on %s failed; no result was '
                                 'written for it.\n' % name)
                return None
            document['runs'].append(run)
            # The raw samples first: a run is not lost to a reporting error
            # or to a failure of the next run.
            _write(document, options.output)
            if options.profile:
                _print_profiles(bench.profiles,
                                os.path.join(options.profile, name))
    except mariadb.MariaDBError as exc:
        sys.stderr.write('MariaDB: %s\n' % exc)
        return None
    finally:
        if server is not None:
            server.stop()
    meta['seconds'] = round(sum(run['seconds'] for run in document['runs']),
                            1)
    return document


def main(argv=None):
    options = _parser().parse_args(argv)
    options.output_given = options.output is not None
    if not options.output_given:
        options.output = 'bench-results.json'
    if options.quick:
        for name, value in QUICK.items():
            setattr(options, name, value)
    if options.render:
        return _render_only(options)
    if (options.runs < 1 or options.b3_runs < 1 or options.b6_runs < 1 or
            options.throughput < 2):
        _parser().error('--runs, --b3-runs, --b6-runs >= 1 and '
                        '--throughput >= 2')
    names = _database_names(options)
    # Thread pool start/stop lines would drown the table.
    logging.getLogger('nova.thread_pool_factory').setLevel(logging.WARNING)

    document = _run_all(options, names)
    if document is None:
        return 2
    _add_tables(document)
    missed = [(name, run['database']) for run in document['runs']
              for name, verdict in run['summary']['verdicts'].items()
              if verdict != report.MET]
    _write(document, options.output)
    _print_tables(document, options)
    meta = document['meta']
    if options.runs < MIN_RUNS:
        print('NOTE: --runs %d is below %d: not a result to record.'
              % (options.runs, MIN_RUNS))
    print('Whole run: %.0f s on %s; git %s (%d modified files); JSON: %s'
          % (meta['seconds'], ', '.join(names), meta['git']['commit'],
             meta['git']['modified_files'], options.output))

    if missed and options.strict:
        return 1
    if options.quick:
        counted = ['%s on %s' % (name, database)
                   for name, database in missed
                   if name in STATEMENT_TARGETS]
        print('Quick run: statement-count targets %s (%s, on %s); the '
              'latency sample above is not a result (see --runs).' % (
                  'MISSED: ' + ', '.join(counted) if counted else 'met',
                  ', '.join(STATEMENT_TARGETS), ', '.join(names)))
        return 1 if counted else 0
    return 0
