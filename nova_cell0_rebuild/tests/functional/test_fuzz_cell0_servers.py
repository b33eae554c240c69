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

"""Property-based fuzzing of the rebuildability API's every parameter.

``GET /os-cell0-rebuild/servers[/{server_id}]`` through nova-api's real
paste pipeline, with whole query strings built from raw bytes (each
parameter, repeated, unknown, empty, alone, not UTF-8), server ids of any
kind in the path (not UTF-8 included), the project id in the URL or not,
and three callers (the owner, an admin, another project's member).

Issue 25, point 4: ``limit=²`` answered 500 (``str.isdigit``), as did a
query or a path that is not UTF-8. Properties checked for every request:

* never a 5xx;
* the status is the one an oracle computes from the API's reference
  (api-ref/source/cell0-servers.inc) and Nova's query parameter types, in
  the order the API checks them (URL, query, policy, marker, server);
* every error is a Nova fault ``{"<name>": {"code": N, "message": ...}}``
  with ``code`` equal to the status;
* nothing is written (the filter issues no INSERT, UPDATE or DELETE).

The number of examples is a quarter of ``CELL0_REBUILD_FUZZ_EXAMPLES``
(default 500, so 125; 2,500 under ``tox -e fuzz``), derandomized unless
``CELL0_REBUILD_FUZZ_SEED`` is set; ``CELL0_REBUILD_FUZZ_REPORT=1`` prints
the status histogram.
"""

import re
import sys
from urllib import parse

import hypothesis
from hypothesis import strategies as st
from nova.api import wsgi as nova_wsgi
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import sqlalchemy as sa
import webob

from nova_cell0_rebuild import fixture
from nova_cell0_rebuild.tests.functional import test_fuzz_rebuild as fuzz
from nova_cell0_rebuild.tests.functional import test_request_cost
from nova_cell0_rebuild.tests import statements as sql_counting

OWN_PROJECT = 'a0b1c2d3' * 4
OTHER_PROJECT = 'f0e1d2c3' * 4
_WRITES = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')
_PARAMETERS = ('limit', 'marker', 'all_projects', 'project_id')
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_FALSE = ('0', 'f', 'false', 'off', 'n', 'no')

#: Who asks: (user, project, roles).
CALLERS = {
    'owner': ('fake', OWN_PROJECT, 'member,reader'),
    'admin': ('admin', OWN_PROJECT, 'admin,member,reader'),
    'other': ('other', OTHER_PROJECT, 'member,reader'),
}


# Strategies ----------------------------------------------------------------

_TEXT = st.text(fuzz._ANY_CHAR.filter(lambda c: not 0xd800 <= ord(c) <
                                      0xe000), max_size=12)
#: Bytes that are often not UTF-8 (no "/": another path, Nova's).
_RAW = st.binary(min_size=1, max_size=6).filter(lambda raw: b'/' not in raw)


def _utf8(strategy):
    return strategy.map(lambda text: text.encode('utf-8'))


_VALUES = {
    'limit': st.sampled_from(
        ['0', '1', '2', '007', '1000', '1001', '9' * 30, '-1', '\u00b2',
         '\u0661', '\uff11', '1.5', ' 1', '1 ', '1\n', 'x', '', '9' * 5000,
         '1e3', '0x1']),
    'marker': st.sampled_from(['buried', 'theirs', 'unknown', '', 'x']),
    'all_projects': st.sampled_from(
        ['', 'True', 'true', 'TRUE', 'yes', 'On', '1', 't', 'y', 'False',
         'no', 'OFF', '0', 'n', 'maybe', '2', 'truee', ' true',
         'true\n', '\u00b9']),
    'project_id': st.sampled_from(
        ['own', 'other', '', 'a b', 'p\u00e9', 'x' * 255, 'x' * 256,
         'abc-DEF-123', 'a_b', 'a/b']),
}


def _value_for(name):
    known = _VALUES.get(name)
    anything = st.one_of(_utf8(_TEXT), _RAW)
    if known is None:
        return anything
    return st.one_of(_utf8(known), _utf8(known), _utf8(known), anything)


_NAME = st.one_of(
    st.sampled_from(_PARAMETERS * 4 + ('sort_key', 'Limit', 'limit ',
                                       'all_tenants', '')).map(
        lambda name: name.encode('utf-8')),
    _utf8(_TEXT), _RAW)

#: (name, value or None for a parameter alone: "?all_projects").
_PAIR = _NAME.flatmap(lambda name: st.tuples(
    st.just(name), st.one_of(
        _value_for(name.decode('utf-8', 'replace')),
        _value_for(name.decode('utf-8', 'replace')), st.none())))

_SERVER_ID = st.one_of(
    st.sampled_from(['buried', 'theirs', 'unknown']).map(
        lambda name: name.encode()),
    _utf8(_TEXT.filter(lambda text: text and '/' not in text)), _RAW)

#: A parameter of the API with one of its typical values, right or wrong.
_KNOWN_PAIR = st.sampled_from(_PARAMETERS).flatmap(lambda name: st.tuples(
    st.just(name.encode()), _utf8(_VALUES[name])))

_QUERY = st.one_of(
    st.lists(_KNOWN_PAIR, max_size=3, unique_by=lambda pair: pair[0]),
    st.lists(_KNOWN_PAIR, max_size=3, unique_by=lambda pair: pair[0]),
    st.lists(_PAIR, max_size=4),
    # One parameter twice.
    st.sampled_from(_PARAMETERS).flatmap(
        lambda name: st.tuples(_value_for(name), _value_for(name)).map(
            lambda values: [(name.encode(), value) for value in values])))

REQUESTS = st.sampled_from(['list', 'list', 'list', 'show']).flatmap(
    lambda kind: st.fixed_dictionaries({
        'caller': st.sampled_from(sorted(CALLERS)),
        'prefix': st.sampled_from(['', '', '', 'own', 'other']),
        'server_id': st.none() if kind == 'list' else _SERVER_ID,
        'query': _QUERY if kind == 'list' else st.one_of(
            st.just([]), st.just([]), _QUERY),
    }))


#: Values that name a server or a project of the test, by parameter.
_SYMBOLS = {b'marker': ('buried', 'theirs', 'unknown'),
            b'project_id': ('own', 'other')}


def _resolve(value, ids, symbols):
    """*value*, or the id it names when it is one of *symbols*."""
    text = value.decode('utf-8', 'replace')
    return ids[text].encode() if text in symbols else value


# The oracle ----------------------------------------------------------------

def _nova_integer(value):
    # Nova's parameter_types.non_negative_integer.
    return len(value) >= 1 and re.search('^[0-9]*$', value) is not None


def _boolean(value):
    if value.endswith('\n'):
        value = value[:-1]  # what a JSON-schema pattern's $ lets through
    return value == '' or value.lower() in _TRUE + _FALSE


def _project_id(value):
    # Nova's parameter_types.project_id.
    return (1 <= len(value) <= 255 and
            re.search('^[a-zA-Z0-9-]*$', value) is not None)


_CHECKS = {'limit': _nova_integer, 'all_projects': _boolean,
           'project_id': _project_id, 'marker': lambda value: True}


def _bad_query(query):
    """Why the query is refused before anything is read, or None."""
    for name, values in query.items():
        if name not in _CHECKS:
            return 'unknown parameter'
        if len(values) > 1:
            return 'given twice'
        if not _CHECKS[name](values[0]):
            return 'bad ' + name
    return None


def expect(request, ids):
    """(statuses, why) of the API's answer, as its reference says."""
    user, project, roles = CALLERS[request['caller']]
    if request['prefix'] and ids[request['prefix']] != project:
        return {400}, "another project's id in the URL"
    try:
        query = webob.Request.blank(
            '/?' + request['raw_query']).GET.dict_of_lists()
    except UnicodeDecodeError:
        return {400}, 'query not UTF-8'
    if request['server_id'] is not None:
        if query:
            return {400}, 'show takes no parameter'
        server_id = request['server_id'].decode('utf-8', 'replace')
        visible = {ids['buried']} if project == OWN_PROJECT else set()
        visible |= {ids['theirs']} if (project == OTHER_PROJECT or
                                       'admin' in roles) else set()
        if server_id in visible:
            return {200}, 'show'
        return {404}, 'not found'
    bad = _bad_query(query)
    if bad:
        return {400}, bad
    limit = query.get('limit', ['1000'])[0]
    if len(limit) > 4300:
        return {400}, 'limit past int()'
    all_projects = query.get('all_projects', ['false'])[0].strip().lower()
    listed = query.get('project_id', [project])[0]
    if (all_projects in ('',) + _TRUE or listed != project) and (
            'admin' not in roles):
        return {403}, 'all projects'
    if int(limit) == 0:
        return {200}, 'limit 0'
    marker = query.get('marker', [None])[0]
    if marker is not None and marker not in (ids['buried'], ids['theirs']):
        return {400}, 'marker not in cell0'
    return {200}, 'list'


# The test ------------------------------------------------------------------

class FuzzCell0ServersApiTest(fuzz._FuzzTestCase):
    """Two buried servers (two projects), every generated GET."""

    examples = max(1, fuzz.EXAMPLES // 4)

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        self.writes = []

        def record(conn, cursor, statement, *args):
            if sql_counting.is_connection_ping(statement):
                return
            if (statement.lstrip().upper().startswith(_WRITES) and
                    test_request_cost._issuer(sys._getframe(1)) ==
                    'filter'):
                self.writes.append(statement)
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', record)

    def _get(self, app, request, ids):
        path = '/os-cell0-rebuild/servers'
        if request['prefix']:
            path = '/' + ids[request['prefix']] + path
        if request['server_id'] is not None:
            path += '/' + parse.quote_from_bytes(request['server_id'],
                                                 safe='')
        user, project, roles = CALLERS[request['caller']]
        req = webob.Request.blank('/v2.1' + path, headers={
            'X-Auth-User': user, 'X-User-Id': user,
            'X-Auth-Project-Id': project, 'X-Roles': roles})
        req.environ['QUERY_STRING'] = request['raw_query']
        return req.get_response(app)

    @staticmethod
    def _raw_query(pairs, ids):
        """The query string: each name and value percent-encoded."""
        parts = []
        for name, value in pairs:
            if value is not None:
                value = _resolve(value, ids, _SYMBOLS.get(name, ()))
            parts.append(parse.quote_from_bytes(name, safe='') + (
                '' if value is None else
                '=' + parse.quote_from_bytes(value, safe='')))
        return '&'.join(parts)

    def _assert_fault(self, resp, why):
        try:
            body = jsonutils.loads(resp.body)
        except ValueError:
            self.fail('%s: %s is not JSON: %r' % (why, resp.status,
                                                  resp.body[:200]))
        self.assertEqual(1, len(body), body)
        fault = list(body.values())[0]
        self.assertEqual(resp.status_int, fault['code'], body)
        self.assertTrue(fault['message'])

    def test_fuzz_cell0_servers_requests(self):
        app = nova_wsgi.Loader(fixture.find_paste_config()).load_app(
            'osapi_compute')
        buried = self._create_buried_server(
            api=self._client('fake', OWN_PROJECT, ['member', 'reader']))
        theirs = self._create_buried_server(
            api=self._client('other', OTHER_PROJECT, ['member', 'reader']))
        ids = {'own': OWN_PROJECT, 'other': OTHER_PROJECT,
               'buried': buried['id'], 'theirs': theirs['id'],
               'unknown': uuidutils.generate_uuid()}
        seen = []

        @fuzz._settings(self.examples)
        @hypothesis.given(request=REQUESTS)
        def check(request):
            request['raw_query'] = self._raw_query(request.pop('query'), ids)
            if request['server_id'] is not None:
                request['server_id'] = _resolve(
                    request['server_id'], ids, ('buried', 'theirs',
                                                'unknown'))
            statuses, why = expect(request, ids)
            before = len(self.writes)
            resp = self._get(app, request, ids)
            seen.append(('show' if request['server_id'] else 'list', why,
                         resp.status_int))
            why = '%s; %s %r -> %s %r' % (
                why, request['caller'], request['raw_query'], resp.status,
                resp.body[:300])
            self.assertLess(resp.status_int, 500, why)
            self.assertIn(resp.status_int, statuses, why)
            self.assertEqual([], self.writes[before:], why)
            if resp.status_int == 200:
                self.assertTrue({'cell0_servers', 'cell0_server'} &
                                set(resp.json), why)
            else:
                self._assert_fault(resp, why)

        self._run(check, seen, self.examples)
