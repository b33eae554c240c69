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

"""Medians, ratios and target verdicts of a bench run, and its table."""

import collections
import statistics

from nova_cell0_rebuild.tests.bench import scenarios
from nova_cell0_rebuild.tests.bench import sql
from nova_cell0_rebuild.tests.bench import waiting
from nova_cell0_rebuild.tests import benchstats

MET = 'MET'
MISSED = 'MISSED'

#: name: (what, comparison, limit).
TARGETS = collections.OrderedDict([
    ('B1', ('API latency, rebuild / create', '<=', 1.1)),
    ('B2 create', ('to ACTIVE, rebuild / create', '<=', 1.05)),
    ('B2 delete+re-create',
     ('to ACTIVE, rebuild / (delete + re-create)', '<=', 0.7)),
    ('B3', ('create latency, with / without filter - 1', '<=', 0.02)),
    ('B4 equal', ('statements per rebuild, few vs many in cell0',
                  'equal', None)),
    ('B4 move', ('rebuild <= Nova create + the move itself', '<=', 0)),
    ('B4 POST', ('statements of the POST, rebuild / Nova create', '<=',
                 2.0)),
    ('B5', ('throughput, rebuild / create', '>=', 0.9)),
])

#: Counted databases; "placement" is shown but judged by no target.
JUDGED_DATABASES = ('api', 'cell0', 'cell1')

# What "the move itself" may cost beyond Nova's create: the statements a
# minimal move needs because the server already exists in cell0, as
# {(database, verb, table): how many}. Anything a rebuild needs more than
# Nova's create and than this is reported as not part of the move.
CELL0_ROW_TABLES = (
    'instances', 'instance_extra', 'instance_metadata',
    'instance_system_metadata', 'instance_info_caches', 'instance_faults',
    'instance_actions', 'instance_actions_events', 'block_device_mapping',
    'tags', 'migrations', 'virtual_interfaces', 'instance_id_mappings',
    'console_auth_tokens', 'security_group_instance_association')
MOVE_ALLOWANCE = dict(
    [(('cell0', 'DELETE', table), 1) for table in CELL0_ROW_TABLES] + [
        # Load the server: instance (+ joins), metadata, system_metadata.
        (('cell0', 'SELECT', 'instances'), 3),
        (('cell0', 'SELECT', 'block_device_mapping'), 1),
        # The fault (gates), then every fault (the history, below).
        (('cell0', 'SELECT', 'instance_faults'), 2),
        # The create action's request id, then every action.
        (('cell0', 'SELECT', 'instance_actions'), 2),
        # The server's history, read to be kept: with its faults and
        # actions above, the actions' events and its ec2 id; a stash left
        # by an earlier move looked up first, then the history stashed.
        (('cell0', 'SELECT', 'instance_actions_events'), 1),
        (('cell0', 'SELECT', 'instance_id_mappings'), 1),
        (('api', 'SELECT', 'cell0_rebuild_server_histories'), 1),
        (('api', 'INSERT', 'cell0_rebuild_server_histories'), 1),
        # Claim (task_state CAS).
        (('cell0', 'UPDATE', 'instances'), 1),
        # The create record (requested networks, personality).
        (('api', 'SELECT', 'cell0_rebuild_create_records'), 1),
        # BuildRequest, unmapping, RequestSpec reset.
        (('api', 'INSERT', 'build_requests'), 1),
        (('api', 'UPDATE', 'instance_mappings'), 1),
        (('api', 'SELECT', 'request_specs'), 1),
        (('api', 'UPDATE', 'request_specs'), 1),
        # The move journal: a look-up, the row (claimed), one update per
        # later step (build request written, cell0 rows removed, casting,
        # cast sent and done together).
        (('api', 'SELECT', 'cell0_rebuild_move_journal'), 1),
        (('api', 'INSERT', 'cell0_rebuild_move_journal'), 1),
        (('api', 'UPDATE', 'cell0_rebuild_move_journal'), 4),
    ])


def _kind(database, statement):
    """(database, verb, table) of a statement in ``sql.compact`` form."""
    words = statement.split(' ')
    return (database, words[0], words[1] if len(words) > 1 else '')


def split_move(rebuild, extra):
    """Split a rebuild's extra statements into (move, other).

    The first occurrences, in execution order, count as the move while
    its allowance lasts.

    :param rebuild: [(database, compact statement)] in execution order.
    :param extra: {(database, compact statement): count} over the create.
    """
    allowance = dict(MOVE_ALLOWANCE)
    remaining = dict(extra)
    move, other = collections.Counter(), collections.Counter()
    for key in rebuild:
        if not remaining.get(key):
            continue
        remaining[key] -= 1
        kind = _kind(*key)
        if allowance.get(kind, 0) > 0:
            allowance[kind] -= 1
            move[key] += 1
        else:
            other[key] += 1
    return dict(move), dict(other)


def _median(values):
    return statistics.median(values) if values else float('nan')


def _quartiles(values):
    if len(values) < 2:
        return (_median(values), _median(values))
    quartiles = statistics.quantiles(values, n=4)
    return quartiles[0], quartiles[2]


def _stats(values):
    low, high = _quartiles(values)
    return {'n': len(values), 'median': _median(values), 'p25': low,
            'p75': high, 'min': min(values) if values else None,
            'max': max(values) if values else None}


def _verdict(name, value):
    _what, comparison, limit = TARGETS[name]
    if value is None:
        return MISSED
    if comparison == '<=':
        return MET if value <= limit else MISSED
    if comparison == '>=':
        return MET if value >= limit else MISSED
    return MET if value else MISSED


def _paired(numerators, denominators):
    """Median of the per-round ratios (an interleaving cross-check)."""
    return _median([a / b for a, b in zip(numerators, denominators) if b])


# -- B4 ---------------------------------------------------------------------

def _counts(statements, origins=(sql.API, sql.BUILD)):
    """{db: [statements, transactions]} for the given origins."""
    counts = collections.OrderedDict(
        (db, [0, 0]) for db in JUDGED_DATABASES + ('placement',))
    for database, statement, origin in statements:
        if origin not in origins:
            continue
        slot = counts.setdefault(database, [0, 0])
        if statement == 'BEGIN':
            slot[1] += 1
        else:
            slot[0] += 1
    return counts


def _judged(counts):
    return tuple(tuple(counts[db]) for db in JUDGED_DATABASES)


def _no_begin(statements, origins):
    """(db, compact statement) of the judged databases, BEGIN excluded."""
    return [(db, sql.compact(text)) for db, text, origin in statements
            if origin in origins and text != 'BEGIN' and
            db in JUDGED_DATABASES]


def _mode(items):
    return collections.Counter(items).most_common(1)[0][0]


def _summarize_b4(raw):
    conditions = []
    for condition in raw['conditions']:
        arms = collections.OrderedDict()
        for arm in (scenarios.REBUILD, scenarios.CREATE_WITHOUT,
                    scenarios.CREATE_WITH):
            repeats = [repeat[arm] for repeat in condition['repeats']]
            vectors = [_judged(_counts(r['statements'])) for r in repeats]
            arms[arm] = {
                'per_repeat': [_counts(r['statements']) for r in repeats],
                'judged_vectors': vectors,
                'mode': _mode(vectors),
                'stable': len(set(vectors)) == 1,
                'heartbeat': [
                    len([s for s in r['statements']
                         if s[2] == sql.HEARTBEAT]) for r in repeats],
                'api_seconds': _stats([r['seconds'] for r in repeats]),
            }
        conditions.append({'others': condition['others'], 'arms': arms})

    few, many = conditions[0], conditions[-1]
    equal = (few['arms'][scenarios.REBUILD]['mode'] ==
             many['arms'][scenarios.REBUILD]['mode'])

    # One rebuild and one Nova create of the "few" condition, each the
    # first repeat with the modal counts.
    def pick(arm):
        info = few['arms'][arm]
        index = info['judged_vectors'].index(info['mode'])
        repeat = raw['conditions'][0]['repeats'][index][arm]
        return repeat['statements']

    origins = (sql.API, sql.BUILD)
    rebuild = _no_begin(pick(scenarios.REBUILD), origins)
    issued_by = collections.defaultdict(collections.Counter)
    for db, text, origin in pick(scenarios.REBUILD):
        issued_by[(db, sql.compact(text))][origin] += 1
    create = _no_begin(pick(scenarios.CREATE_WITHOUT), origins)
    extra = sql.multiset_diff(rebuild, create)
    fewer = sql.multiset_diff(create, rebuild)
    move, other = split_move(rebuild, extra)
    move_n = sum(move.values())
    margin = len(rebuild) - (len(create) + move_n)
    rebuild_post = _no_begin(pick(scenarios.REBUILD), (sql.API,))
    create_post = _no_begin(pick(scenarios.CREATE_WITHOUT), (sql.API,))
    return {
        'rebuild_post_statements': len(rebuild_post),
        'create_post_statements': len(create_post),
        'conditions': conditions,
        'equal': equal,
        'rebuild_statements': len(rebuild),
        'create_statements': len(create),
        'move_statements': move_n,
        'other_extra_statements': sum(other.values()),
        'fewer_statements': sum(fewer.values()),
        'margin': margin,
        'move': _listing(move),
        'other': [row + [', '.join('%s %d' % item for item in sorted(
            issued_by[tuple(row[:2])].items()))] for row in _listing(other)],
        'fewer': _listing(fewer),
        'rebuild_api_request': [
            [db, sql.compact(text)]
            for db, text, origin in pick(scenarios.REBUILD)
            if origin == sql.API],
        'rebuild_all': [list(s) for s in pick(scenarios.REBUILD)],
        'create_all': [list(s) for s in pick(scenarios.CREATE_WITHOUT)],
    }


def _listing(counter):
    return [[db, text, n] for (db, text), n in sorted(counter.items())]


# -- summary -----------------------------------------------------------------

def summarize(raw):
    """Medians, ratios and verdicts from a run's raw samples."""
    summary = collections.OrderedDict()
    verdicts = collections.OrderedDict()
    values = collections.OrderedDict()

    b12 = raw['b1_b2']
    rebuild, create, recreate = (b12[scenarios.REBUILD],
                                 b12[scenarios.CREATE],
                                 b12[scenarios.RECREATE])
    summary['B1'] = {arm: _stats(b12[arm]['api']) for arm in b12}
    summary['B2'] = {arm: _stats(b12[arm]['active']) for arm in b12}
    values['B1'] = (summary['B1'][scenarios.REBUILD]['median'] /
                    summary['B1'][scenarios.CREATE]['median'])
    values['B2 create'] = (summary['B2'][scenarios.REBUILD]['median'] /
                           summary['B2'][scenarios.CREATE]['median'])
    values['B2 delete+re-create'] = (
        summary['B2'][scenarios.REBUILD]['median'] /
        summary['B2'][scenarios.RECREATE]['median'])
    summary['paired'] = {
        'B1': _paired(rebuild['api'], create['api']),
        'B2 create': _paired(rebuild['active'], create['active']),
        'B2 delete+re-create': _paired(rebuild['active'],
                                       recreate['active']),
    }

    b3 = raw['b3']
    summary['B3'] = {arm: _stats(b3[arm]['api']) for arm in b3}
    summary['B3 active'] = {arm: _stats(b3[arm]['active']) for arm in b3}
    values['B3'] = (summary['B3'][scenarios.CREATE_WITH]['median'] /
                    summary['B3'][scenarios.CREATE_WITHOUT]['median'] - 1)
    summary['paired']['B3'] = _paired(
        b3[scenarios.CREATE_WITH]['api'],
        b3[scenarios.CREATE_WITHOUT]['api']) - 1

    b4 = _summarize_b4(raw['b4'])
    summary['B4'] = b4
    values['B4 equal'] = b4['equal']
    values['B4 move'] = b4['margin']
    values['B4 POST'] = (b4['rebuild_post_statements'] /
                         b4['create_post_statements'])

    b5 = collections.OrderedDict()
    for batch in raw['b5']['batches']:
        arm = b5.setdefault(batch['arm'], {
            'servers': 0, 'active': 0, 'error': 0, 'wall_seconds': 0.0,
            'post_seconds': 0.0, 'batches': []})
        arm['servers'] += batch['size']
        arm['active'] += batch['active']
        arm['error'] += batch['error']
        arm['wall_seconds'] += batch['wall_seconds']
        arm['post_seconds'] += batch['post_seconds']
        arm['batches'].append(batch['wall_seconds'])
    for arm in b5.values():
        arm['per_second'] = arm['active'] / arm['wall_seconds']
    summary['B5'] = b5
    values['B5'] = (b5[scenarios.REBUILD]['per_second'] /
                    b5[scenarios.CREATE]['per_second'])

    # Runs made before B6 have no 'b6'; B6 has no target (the spec sets
    # none): its ratio is shown, not judged.
    if 'b6' in raw:
        summary['B6'] = benchstats.summarize_waiting(
            raw['b6'], waiting.SERVICE, waiting.USER)
        values['B6'] = summary['B6']['ratio']['median']

    for name in TARGETS:
        verdicts[name] = _verdict(name, values[name])
    summary['values'] = values
    summary['verdicts'] = verdicts
    return summary


# -- table -------------------------------------------------------------------

def _ms(seconds):
    return '%8.1f ms' % (seconds * 1000.0)


def _row(label, stats):
    return '  %-34s %s %s %s' % (label, _ms(stats['median']),
                                 _ms(stats['p25']), _ms(stats['p75']))


def _target_line(name, label, value, verdict, percent=False):
    _what, comparison, limit = TARGETS[name]
    if percent:
        shown = '%+.1f %%' % (value * 100)
        wanted = '%s %+.0f %%' % (comparison, limit * 100)
    else:
        shown = '%.3f' % value
        wanted = '%s %.2f' % (comparison, limit)
    return '  %-34s %11s   target %-9s %s' % (label, shown, wanted, verdict)


def render(summary, meta, run):
    """The printed table of one *run* (one database)."""
    verdicts = summary['verdicts']
    values = summary['values']
    paired = summary['paired']
    lines = []
    add = lines.append
    add('nova-cell0-rebuild benchmark (tox -e bench)')
    add('  %s; %s' % (meta['machine_line'], meta['versions_line']))
    add('  databases: %s (%s); this run %.0f s, load average %.2f before, '
        '%.2f after' % (run['database'], run.get('server', '?'),
                        run.get('seconds', 0),
                        run.get('loadavg_before', [0])[0],
                        run.get('loadavg_after', [0])[0]))
    add('  %d interleaved runs per arm (B1/B2), %d (B3); medians; '
        'time to ACTIVE polled every 20 ms on the cell database'
        % (meta['options']['runs'], meta['options']['b3_runs']))
    if meta['options'].get('profile'):
        add('  PROFILED RUN: a stack sampler ran during the B1/B2 API '
            'calls; the timings are not comparable to a normal run.')
    add('')
    header = '  %-34s %11s %11s %11s' % ('', 'median', 'p25', 'p75')

    add('B1  API latency (POST)')
    add(header)
    b1 = summary['B1']
    add(_row('rebuild from cell0', b1[scenarios.REBUILD]))
    add(_row('create, same server shape', b1[scenarios.CREATE]))
    add(_row('(delete + re-create, no filter)', b1[scenarios.RECREATE]))
    add(_target_line('B1', 'ratio rebuild / create', values['B1'],
                     verdicts['B1']))
    add('  %-34s %11.3f' % ('(median of per-round ratios)', paired['B1']))
    add('')

    add('B2  time to ACTIVE (from the POST)')
    add(header)
    b2 = summary['B2']
    add(_row('rebuild from cell0 -> ACTIVE', b2[scenarios.REBUILD]))
    add(_row('create -> ACTIVE', b2[scenarios.CREATE]))
    add(_row('delete + re-create -> ACTIVE', b2[scenarios.RECREATE]))
    add(_target_line('B2 create', 'ratio rebuild / create',
                     values['B2 create'], verdicts['B2 create']))
    add(_target_line('B2 delete+re-create',
                     'ratio rebuild / (delete+re-create)',
                     values['B2 delete+re-create'],
                     verdicts['B2 delete+re-create']))
    add('  %-34s %11.3f / %.3f' % ('(median of per-round ratios)',
                                   paired['B2 create'],
                                   paired['B2 delete+re-create']))
    add('')

    add('B3  filter overhead on the create path (POST /servers)')
    add(header)
    b3 = summary['B3']
    add(_row('create with cell0_rebuild', b3[scenarios.CREATE_WITH]))
    add(_row('create without (plain Nova)', b3[scenarios.CREATE_WITHOUT]))
    add(_target_line('B3', 'overhead', values['B3'], verdicts['B3'],
                     percent=True))
    add('  %-34s %+10.1f %%' % ('(median of per-round overheads)',
                                paired['B3'] * 100))
    add('')

    b4 = summary['B4']
    add('B4  SQL statements per operation, POST -> ACTIVE -> quiet '
        '(statements [transactions])')
    add('  %-40s %9s %9s %9s %9s %9s  %s' % (
        '', 'api', 'cell0', 'cell1', 'total', 'placement', 'API POST'))
    for condition in b4['conditions']:
        for arm, label in ((scenarios.REBUILD, 'rebuild'),
                           (scenarios.CREATE_WITHOUT, "Nova's create"),
                           (scenarios.CREATE_WITH, 'create with filter')):
            info = condition['arms'][arm]
            index = info['judged_vectors'].index(info['mode'])
            counts = info['per_repeat'][index]
            total = sum(counts[db][0] for db in JUDGED_DATABASES)
            total_tx = sum(counts[db][1] for db in JUDGED_DATABASES)
            cells = ['%4d [%2d]' % tuple(counts[db])
                     for db in JUDGED_DATABASES]
            add('  %-40s %s %4d [%2d] %9d %s%s' % (
                '%s, %d in cell0' % (label, condition['others']),
                ' '.join(cells), total, total_tx, counts['placement'][0],
                _ms(info['api_seconds']['median']),
                '' if info['stable'] else '  (repeats differ: %s)'
                % sorted(set(info['judged_vectors']))))
    add('  %-34s %11s   target %-9s %s' % (
        'rebuild counts, few vs many', 'equal' if b4['equal'] else
        'DIFFERENT', 'equal', verdicts['B4 equal']))
    add('  %-34s %4d <= %d + %d ?  (%+d)        %s' % (
        "rebuild <= Nova's create + move", b4['rebuild_statements'],
        b4['create_statements'], b4['move_statements'], b4['margin'],
        verdicts['B4 move']))
    add('  %-34s %d extra not part of the move, %d fewer than the '
        'create' % ('', b4['other_extra_statements'],
                    b4['fewer_statements']))
    add('  %-34s %4d / %d = %.2f  target <= %.2f  %s' % (
        'API POST only, rebuild / create', b4['rebuild_post_statements'],
        b4['create_post_statements'], values['B4 POST'],
        TARGETS['B4 POST'][2], verdicts['B4 POST']))
    add('')

    b5 = summary['B5']
    add('B5  throughput: servers back to back -> all ACTIVE '
        '(batches rebuild, create, create, rebuild)')
    add('  %-34s %9s %9s %9s %11s %s' % (
        '', 'servers', 'ACTIVE', 'error', 'wall', 'servers/s'))
    for arm in (scenarios.REBUILD, scenarios.CREATE):
        info = b5[arm]
        add('  %-34s %9d %9d %9d %9.1f s %9.2f' % (
            arm, info['servers'], info['active'], info['error'],
            info['wall_seconds'], info['per_second']))
    add(_target_line('B5', 'ratio rebuild / create', values['B5'],
                     verdicts['B5']))
    add('')

    if 'B6' in summary:
        lines.extend(benchstats.render_waiting(
            summary['B6'], waiting.SERVICE, waiting.USER))
        add('')

    missed = [name for name, verdict in verdicts.items()
              if verdict != MET]
    add('Targets: %d met, %d missed%s' % (
        len(verdicts) - len(missed), len(missed),
        (': MISSED ' + ', '.join(missed)) if missed else ''))
    return '\n'.join(lines)


def render_statements(summary):
    """B4's statement listings: one rebuild, and its diff with a create."""
    b4 = summary['B4']
    lines = []
    add = lines.append
    add('B4  statements of one rebuild during its API request '
        '(normalized, in order):')
    for index, (db, text) in enumerate(b4['rebuild_api_request']):
        add('  %3d %-5s %s' % (index + 1, db, text))
    for title, key in (
            ("the move itself (extra over Nova's create)", 'move'),
            ("extra over Nova's create, not part of the move", 'other'),
            ("in Nova's create, not in the rebuild", 'fewer')):
        add('')
        add('B4  rebuild vs Nova\'s create, POST -> quiet, BEGIN '
            'excluded: %s' % title)
        for row in b4[key]:
            db, text, count = row[:3]
            add('  %+4d %-5s %s%s' % (
                count if key != 'fewer' else -count, db, text,
                '   [all of them in the rebuild: %s]' % row[3]
                if len(row) > 3 else ''))
    return '\n'.join(lines)
