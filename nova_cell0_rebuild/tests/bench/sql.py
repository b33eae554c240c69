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

"""Count and normalize the SQL statements each database receives.

A ``before_cursor_execute`` hook on every engine of the harness (the Nova
API database, which also holds our tables, cell0, cell1 and placement)
records the statements issued while a recording is open. Statements the
bench itself issues (polling for ACTIVE) are muted and never counted.
"""

import collections
import functools
import os
import re
import sys
import threading
import time

import sqlalchemy as sa

# Greenthread-local under eventlet (threading is monkey patched).
_LOCAL = threading.local()

_WS = re.compile(r'\s+')
_SELECT_LIST = re.compile(r'SELECT (DISTINCT )?(?P<cols>.+?) FROM ',
                          re.IGNORECASE)
_PARAM_LIST = re.compile(r'\((?:\?|%s|:\w+)(?:, (?:\?|%s|:\w+))*\)')
_INSERT = re.compile(r'^INSERT INTO (?P<table>\S+) \(.*?\) VALUES .*$',
                     re.IGNORECASE)
_NUMBER = re.compile(r'(?<![\w.])\d+(?![\w.])')


# Who issued a statement, found by walking its stack: the innermost
# marker wins; a statement with none comes from the API request (or the
# greenthreads it spawned to query the cells).
API = 'api'
BUILD = 'build'
HEARTBEAT = 'heartbeat'
_ORIGINS = (
    (os.path.join('nova', 'servicegroup', ''), None, HEARTBEAT),
    (os.path.join('nova', 'conductor', 'manager.py'), None, BUILD),
    (os.path.join('nova', 'scheduler', 'manager.py'), None, BUILD),
    (os.path.join('nova', 'compute', 'manager.py'), None, BUILD),
)


def origin(frame):
    """``api``, ``build`` or ``heartbeat``."""
    while frame is not None:
        code = frame.f_code
        for path, function, name in _ORIGINS:
            if path in code.co_filename and (function is None or
                                             code.co_name == function):
                return name
        frame = frame.f_back
    # A worker of Nova's scatter-gather inherits its caller's origin.
    return getattr(_LOCAL, 'origin', None) or API


def propagate_origin(scatter_gather_cells):
    """Wrap ``nova.context.scatter_gather_cells`` so that the statements
    its worker greenthreads issue keep the origin of the caller.
    """
    @functools.wraps(scatter_gather_cells)
    def wrapper(context, cell_mappings, timeout, fn, *args, **kwargs):
        inherited = origin(sys._getframe(1))

        @functools.wraps(fn)
        def in_worker(*a, **k):
            previous = getattr(_LOCAL, 'origin', None)
            _LOCAL.origin = inherited
            try:
                return fn(*a, **k)
            finally:
                _LOCAL.origin = previous
        return scatter_gather_cells(context, cell_mappings, timeout,
                                    in_worker, *args, **kwargs)
    return wrapper


def _short_select_list(match):
    cols = match.group('cols')
    if len(cols) <= 24 and '(' in cols:
        # Keep aggregates visible: "SELECT count(*) FROM".
        return 'SELECT %s FROM ' % cols
    return 'SELECT … FROM '


def normalize(statement):
    """A stable, readable form of one SQL statement.

    Whitespace collapsed, identifiers unquoted, select lists elided,
    parameter lists and numeric literals folded, INSERT column lists
    elided.
    """
    # MySQL quotes reserved words (`binary`): the same statement as
    # SQLite's, once unquoted.
    text = _WS.sub(' ', statement.replace('`', '')).strip()
    insert = _INSERT.match(text)
    if insert:
        return 'INSERT INTO %s (…) VALUES (…)' % insert.group('table')
    text = _SELECT_LIST.sub(_short_select_list, text)
    text = _PARAM_LIST.sub('(?…)', text)
    text = _NUMBER.sub('N', text)
    return text


_TABLES = re.compile(r'\b(?:FROM|JOIN|INTO|UPDATE) (?!\()(?P<table>\w+)')
_CONDITION = re.compile(
    r'(?:\w+\.)?(?P<column>\w+) (?:=|!=|<|>|<=|>=|IN|IS|REGEXP|LIKE) ')
_WHERE_END = re.compile(r' (?:ORDER BY|GROUP BY|LIMIT) |\) AS ')


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def compact(normalized):
    """One short line per statement: verb, table, joined tables, the
    columns set (UPDATE) and the columns filtered on.

    ``SELECT instances +instance_extra,tags WHERE deleted,project_id,uuid``
    """
    verb = normalized.split(' ', 1)[0].upper()
    tables = _unique(m.group('table') for m in _TABLES.finditer(normalized))
    if verb not in ('SELECT', 'INSERT', 'UPDATE', 'DELETE') or not tables:
        return normalized
    text = '%s %s' % (verb, tables[0])
    if verb == 'UPDATE' and ' SET ' in normalized:
        assignments = normalized.split(' SET ', 1)[1].split(' WHERE ')[0]
        # Sorted: SQLAlchemy 1.4 and 2.0 order them differently.
        text += ' SET ' + ','.join(sorted(
            part.split('=', 1)[0].strip()
            for part in assignments.split(', ')))
    if len(tables) > 1:
        text += ' +' + ','.join(tables[1:])
    if ' WHERE ' in normalized:
        where = _WHERE_END.split(normalized.split(' WHERE ', 1)[1], 1)[0]
        columns = _unique(m.group('column')
                          for m in _CONDITION.finditer(where + ' '))
        if columns:
            text += ' WHERE ' + ','.join(columns)
    return text


class muted(object):
    """Context manager: statements of this greenthread are not recorded."""

    def __enter__(self):
        self._previous = getattr(_LOCAL, 'muted', False)
        _LOCAL.muted = True

    def __exit__(self, *exc):
        _LOCAL.muted = self._previous


class StatementCounter(object):
    """Listens on named engines; records while a recording is open.

    :param engines: {database name: SQLAlchemy engine}.
    """

    def __init__(self, engines):
        self.engines = dict(engines)
        self._recording = None
        self.last_statement_at = time.monotonic()
        self._listeners = []
        for name, engine in self.engines.items():
            listener = self._listener(name)
            sa.event.listen(engine, 'before_cursor_execute', listener)
            self._listeners.append((engine, 'before_cursor_execute',
                                    listener))
            if engine.dialect.name != 'sqlite':
                # oslo.db sends SQLite an explicit BEGIN statement; other
                # drivers begin implicitly, so record the event as one.
                begin = self._begin_listener(name)
                sa.event.listen(engine, 'begin', begin)
                self._listeners.append((engine, 'begin', begin))

    def _record(self, name, statement, frame):
        if getattr(_LOCAL, 'muted', False):
            return
        self.last_statement_at = time.monotonic()
        if self._recording is not None:
            self._recording.append((name, statement, origin(frame)))

    def _listener(self, name):
        def before_cursor_execute(conn, cursor, statement, parameters,
                                  context, executemany):
            self._record(name, statement, sys._getframe(1))
        return before_cursor_execute

    def _begin_listener(self, name):
        def begin(conn):
            self._record(name, 'BEGIN', sys._getframe(1))
        return begin

    def remove(self):
        for engine, event, listener in self._listeners:
            sa.event.remove(engine, event, listener)
        self._listeners = []

    def start(self):
        self._recording = []

    def mark(self):
        """How many statements the open recording holds so far."""
        return len(self._recording or [])

    def stop(self):
        """Stop recording; returns [(database, raw statement, origin)]."""
        recorded, self._recording = self._recording or [], None
        return recorded

    def quiet_for(self):
        """Seconds since any engine last saw an unmuted statement."""
        return time.monotonic() - self.last_statement_at


def by_database(recorded, databases):
    """{database: count} for every named database (0 when none)."""
    counts = collections.OrderedDict((name, 0) for name in databases)
    for name, _statement, _origin in recorded:
        counts[name] = counts.get(name, 0) + 1
    return counts


def normalized_by_database(recorded):
    """{database: [normalized statement, ...]} in execution order."""
    result = collections.OrderedDict()
    for name, statement, _origin in recorded:
        result.setdefault(name, []).append(normalize(statement))
    return result


def multiset_diff(extra, base):
    """What *extra* has more than *base*, as {statement: count}."""
    diff = collections.Counter(extra)
    diff.subtract(collections.Counter(base))
    return {key: count for key, count in sorted(diff.items()) if count > 0}
