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

"""Property-based fuzzing of rebuild requests for a server buried in cell0.

Hypothesis generates whole requests (raw bodies, any JSON, rebuild objects
with every field of Nova's rebuild schema right or wrong, version and
content type headers, huge bodies) and sends them through nova-api's real
paste pipeline with the filter in it, twice loaded: with the default
``[cell0_rebuild] min_microversion`` (Nova's maximum) and with the lowest one
(2.57), so that every rebuild schema from 2.57 on reaches the filter.

Properties checked for every request:

* never a 5xx, but where Nova's own rebuild schema validator crashes
  (non-ASCII text in ``user_data``: Nova answers 500 itself, for any
  server; the filter may answer that 500 too, or a 400);
* the status is the one Nova gives for that request: an oracle computes it
  from Nova's own pieces (version header parsing, content type check,
  action lookup, the rebuild schema of the microversion) and the few
  semantic checks of a rebuild (image, key pair, metadata quota);
* every 4xx is a Nova fault ``{"<name>": {"code": N, "message": "..."}}``
  with ``code`` equal to the status, except the 413 of the ``sizelimit``
  middleware, which Nova answers before any of its code runs;
* nothing changes on a refusal: the server stays ERROR, mapped to cell0,
  with the same instance (``updated`` included), the same cell0 rows, no
  BuildRequest, and the same create records and move journal.

Valid bodies (a 202 that moves the server) are generated on purpose, but
rarely: a 202 is asserted only for a request the oracle finds valid, and
as no compute service runs, the conductor buries the server in cell0
again; the test waits for that (ERROR, quiet state) and takes the new
state as the baseline for the next request. Excluding valid bodies by
construction would leave the path after the last check (the move and the
202 view) unfuzzed.

What the fuzzing once found the filter answering unlike Nova is pinned in
NovaParityTest and generated here too.

FuzzReaperRebuildTest sends the same bodies as a reaper (issue 25, point
4), from ``reaper_min_microversion`` below the threshold, to the buried
server and to one in a real cell: Nova's schema first (400, never a 500),
then the landed server refused (409), never re-imaged. It runs a quarter
of the examples; test_fuzz_cell0_servers fuzzes the rebuildability API.

``CELL0_REBUILD_FUZZ_EXAMPLES`` (default 500) sets the number of examples,
``CELL0_REBUILD_FUZZ_SEED`` a random seed instead of the derandomized run,
and ``CELL0_REBUILD_FUZZ_REPORT=1`` prints the status histogram to stdout
(``tox -e fuzz``); it is always attached to the test's details.
"""

import base64
import collections
import os
import sys
import time

import fixtures as fixtures_lib
import hypothesis
from hypothesis import strategies as st
from nova.api.openstack import api_version_request
from nova.api.openstack.compute.schemas import servers as servers_schema
from nova.api.openstack import wsgi as nova_openstack_wsgi
from nova.api.validation import validators
from nova.api import wsgi as nova_wsgi
from nova import crypto
from nova import exception as nova_exception
from nova.tests import fixtures as nova_fixtures
from oslo_config import cfg
from oslo_serialization import jsonutils
from testtools import content
import webob

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import fixture
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests import microversions as mv

CONF = cfg.CONF
CELL0 = '00000000-0000-0000-0000-000000000000'

EXAMPLES = int(os.environ.get('CELL0_REBUILD_FUZZ_EXAMPLES', 500))
SEED = os.environ.get('CELL0_REBUILD_FUZZ_SEED')
REPORT = os.environ.get('CELL0_REBUILD_FUZZ_REPORT') == '1'

#: The thresholds the filter is loaded with: the default and the lowest.
THRESHOLDS = (mv.NOVA_MAX, '2.57')
KEY_NAME = 'kp1'
#: Nova's default metadata_items quota.
METADATA_ITEMS = 128

_GLANCE = nova_fixtures.GlanceFixture
KNOWN_IMAGES = (_GLANCE.image1['id'], _GLANCE.image2['id'],
                _GLANCE.auto_disk_config_enabled_image['id'],
                _GLANCE.auto_disk_config_disabled_image['id'])

#: Nova's rebuild schema for each range of microversions (servers.py).
_SCHEMAS = (
    ('2.1', '2.18', servers_schema.rebuild),
    ('2.19', '2.53', servers_schema.rebuild_v219),
    ('2.54', '2.56', servers_schema.rebuild_v254),
    ('2.57', '2.62', servers_schema.rebuild_v257),
    ('2.63', '2.89', servers_schema.rebuild_v263),
    ('2.90', '2.93', servers_schema.rebuild_v290),
    ('2.94', mv.NOVA_MAX, servers_schema.rebuild_v294),
)

# Content types Nova takes as JSON, and two it answers 415 for before the
# action is looked at (the filter leaves those to Nova).
_CONTENT_TYPES = (None, 'application/json', 'application/json; charset=UTF-8',
                  'application/vnd.openstack.compute+json', 'text/plain', '',
                  'application/xml', 'text/html')
OTHER_PROJECT = "abcdef0123"


# Strategies ----------------------------------------------------------------

_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7e)
_ANY_CHAR = st.one_of(st.characters(), st.characters(categories=['Cs']),
                      st.sampled_from('\x00\t\n\u200b\ufeff\U0001f600'))
_TEXT = st.text(_ANY_CHAR, max_size=24)
_JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(),
    _TEXT)
JSON = st.recursive(
    _JSON_LEAF,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_TEXT, children, max_size=4)),
    max_leaves=12)


def _repeat(text, size):
    return (text * (size // len(text) + 1))[:size]


#: Long strings: just over a limit, or a few hundred KiB (sizelimit: 413).
HUGE = st.builds(
    _repeat, st.text(_ANY_CHAR, min_size=1, max_size=3),
    st.one_of(st.sampled_from([64, 65535, 65536, 65537]),
              st.integers(254, 258), st.integers(1000, 150 * 1024)))

_B64 = st.binary(max_size=48).map(
    lambda b: base64.b64encode(b).decode())
_PRINTABLE = st.text(st.characters(categories=['L', 'N', 'P', 'S', 'Zs']),
                     min_size=1, max_size=40)
_FQDN = st.from_regex(r'\A[a-zA-Z0-9-._]{1,40}\Z')
_METADATA_KEY = st.from_regex(r'\A[a-zA-Z0-9-_:. ]{1,20}\Z')
_CERTS = st.lists(_PRINTABLE, min_size=1, max_size=3, unique=True)

#: Values Nova's schema of 2.94 and later takes, or nearly.
GOOD = {
    'imageRef': st.sampled_from(KNOWN_IMAGES),
    'name': _PRINTABLE,
    'adminPass': _TEXT,
    'metadata': st.dictionaries(_METADATA_KEY, st.text(max_size=20),
                                max_size=4),
    'preserve_ephemeral': st.sampled_from(
        [True, False, 'true', 'False', 'on', 'NO', '1', '0']),
    'OS-DCF:diskConfig': st.sampled_from(['AUTO', 'MANUAL']),
    'accessIPv4': st.ip_addresses(v=4).map(str),
    'accessIPv6': st.ip_addresses(v=6).map(str),
    'description': st.one_of(st.none(), _PRINTABLE),
    'key_name': st.one_of(st.none(), st.just(KEY_NAME)),
    'user_data': st.one_of(st.none(), _B64),
    'trusted_image_certificates': st.one_of(st.none(), _CERTS),
    'hostname': _FQDN,
}

#: Wrong types, lengths and formats, unknown references, huge strings.
BAD = {
    'imageRef': st.one_of(
        st.uuids().map(str), st.sampled_from(
            [nova_fixtures.CinderFixture.IMAGE_BACKED_VOL, '',
             'http://glance/images/' + KNOWN_IMAGES[0]])),
    'name': st.sampled_from(['', ' x', 'x ', 'x\x00', '\u2028', '\ud800']),
    'adminPass': st.one_of(st.integers(), st.none()),
    'metadata': st.one_of(
        st.integers(METADATA_ITEMS - 1, METADATA_ITEMS + 2).map(
            lambda n: {'k%d' % i: 'v' for i in range(n)}),
        st.dictionaries(_TEXT, JSON, min_size=1, max_size=3),
        st.sampled_from([{'k' * 256: 'v'}, {'k': 'v' * 256}, {'': 'v'},
                         {'k': None}, {'k': '\ud800'}, []])),
    'preserve_ephemeral': st.sampled_from(['maybe', 0, 1, None, 'TrUe']),
    'OS-DCF:diskConfig': st.sampled_from(['auto', 'Auto', '', None]),
    'accessIPv4': st.sampled_from(['256.1.1.1', '1.2.3', '::1', '', None]),
    'accessIPv6': st.sampled_from(['1.2.3.4', ':::', 'fe80::1%eth0', '']),
    'personality': st.lists(st.fixed_dictionaries(
        {'path': st.just('/etc/motd'), 'contents': _B64}), max_size=2),
    'description': st.sampled_from(['\x00', '\x1b[31m', 'a\nb']),
    'key_name': st.one_of(_PRINTABLE, st.just('')),
    'user_data': st.sampled_from(['not base64!', '====', '', 'YQ']),
    'trusted_image_certificates': st.one_of(
        st.sampled_from([[], ['dup', 'dup'], [''], 'cert', [1]]),
        st.just(['c%d' % i for i in range(51)])),
    'hostname': st.sampled_from(['a_b', 'a.b.', '-', '', 'h\u00e9', 'a b',
                                 'x' * 256]),
}


#: Values Nova's schema takes but a rebuild refuses: 400 or 403 (quota).
REFUSED = {
    'imageRef': st.one_of(st.uuids().map(str), st.just(
        nova_fixtures.CinderFixture.IMAGE_BACKED_VOL)),
    'key_name': _PRINTABLE.filter(lambda name: name != KEY_NAME),
    'metadata': st.integers(METADATA_ITEMS + 1, METADATA_ITEMS + 3).map(
        lambda n: {'k%d' % i: 'v' for i in range(n)}),
}


def _bad_value(field):
    return st.one_of(BAD[field], JSON, HUGE)


def _rebuild_object(good, bad, refused, extra, drop_image):
    rebuild = dict(good, **refused)
    rebuild.update(bad)
    rebuild.update(extra)
    if drop_image:
        rebuild.pop('imageRef', None)
    return rebuild


REBUILD_OBJECT = st.builds(
    _rebuild_object,
    st.fixed_dictionaries({'imageRef': GOOD['imageRef']}, optional={
        name: value for name, value in GOOD.items() if name != 'imageRef'}),
    # Mostly one wrong field or two: a valid body moves the server (1 s).
    # Hypothesis favours the first element of a sampled_from.
    st.sampled_from([1, 0, 1, 1, 2, 2, 0, 1]).flatmap(
        lambda n: st.lists(st.sampled_from(sorted(BAD)), min_size=n,
                           max_size=n, unique=True)).flatmap(
        lambda names: st.fixed_dictionaries(
            {name: _bad_value(name) for name in names})),
    st.sampled_from(['imageRef', None, None, 'key_name', None,
                     'metadata']).flatmap(
        lambda name: st.fixed_dictionaries(
            {name: REFUSED[name]} if name else {})),
    st.one_of(st.just({}), st.dictionaries(
        _TEXT.filter(lambda k: k not in BAD), JSON, max_size=2)),
    st.sampled_from([False] * 9 + [True]))


def _dump(value):
    return jsonutils.dump_as_bytes(value)


def _unstorable(rebuild):
    """Whether a rebuild writes text no cell database stores."""
    texts = [rebuild.get(k) for k in ('name', 'description', 'hostname',
                                      'user_data', 'accessIPv4',
                                      'accessIPv6')]
    for key, value in (rebuild.get('metadata') or {}).items():
        texts += [key, value]
    for text in texts:
        if isinstance(text, str):
            if '\x00' in text:
                return True
            try:
                text.encode('utf-8')
            except UnicodeEncodeError:
                return True
    return False


def _truncated(value_and_cut):
    raw, cut = value_and_cut
    return raw[:max(1, len(raw) * cut // 100)]


#: Top-level keys that are not a Nova server action (so that no other
#: action, a lock say, is ever run).
_NOT_AN_ACTION = st.one_of(
    st.sampled_from(['Rebuild', 'REBUILD', ' rebuild', 'rebuild ',
                     'rebuild\x00', 'reBuild', '']),
    _TEXT.map(lambda k: 'x-' + k))

#: Each kind of body, and how often it is drawn.
BODY_KINDS = {
    'raw-bytes': (1, st.binary(max_size=64)),
    'truncated-json': (1, st.tuples(
        REBUILD_OBJECT.map(lambda r: _dump({'rebuild': r})),
        st.integers(0, 99)).map(_truncated)),
    'non-object-json': (1, st.one_of(
        _JSON_LEAF, st.lists(JSON, max_size=3)).map(_dump)),
    'wrong-top-level': (1, st.one_of(
        st.dictionaries(_NOT_AN_ACTION, JSON, min_size=1, max_size=2),
        st.builds(lambda r, k, v: {'rebuild': r, k: v},
                  REBUILD_OBJECT, _NOT_AN_ACTION, JSON),
        st.just({})).map(_dump)),
    'rebuild-any-json': (1, JSON.map(lambda x: _dump({'rebuild': x}))),
    'rebuild-object': (6, REBUILD_OBJECT.map(
        lambda r: _dump({'rebuild': r}))),
    'oversized': (1, st.integers(100 * 1024, 300 * 1024).map(
        lambda size: _dump({'rebuild': {'imageRef': KNOWN_IMAGES[0],
                                        'adminPass': 'x' * size}}))),
}
BODIES = st.sampled_from(
    [kind for kind, (weight, _) in sorted(BODY_KINDS.items())
     for _ in range(weight)]).flatmap(
    lambda kind: st.tuples(st.just(kind), BODY_KINDS[kind][1]))

_VERSIONS = {
    # At or above a threshold: the filter's own requests.
    'high': st.sampled_from([mv.NOVA_MAX, 'latest', '2.57', '2.63', '2.90',
                             '2.94']),
    'valid': st.sampled_from(
        ['2.%d' % minor for minor in range(1, mv.NOVA_MAX_MINOR + 1)]
        + ['latest']),
    'odd': st.sampled_from(
        [mv.ABOVE_NOVA_MAX, '2.999', '3.0', '1.1', '2.0', '0.0', '2.01',
         '02.1', ' ' + mv.NOVA_MAX, mv.NOVA_MAX + ' ', 'LATEST', 'Latest',
         '2', '2.', '.5', '2.1.1',
         '-2.1', '']),
    'text': st.text(_ASCII, max_size=12),
}
_VERSION = st.sampled_from(['high'] * 4 + ['valid', 'odd', 'text']).flatmap(
    lambda kind: _VERSIONS[kind])
_SERVICE_HEADER = st.one_of(
    _VERSION.map(lambda v: 'compute ' + v),
    _VERSION.map(lambda v: 'compute ' + v),
    st.sampled_from(['compute', 'COMPUTE ' + mv.NOVA_MAX,
                     'compute  ' + mv.NOVA_MAX, 'volume 3.0',
                     'compute %s, volume 3.0' % mv.NOVA_MAX,
                     'compute 2.1, compute ' + mv.NOVA_MAX, '', ' ']),
    st.text(_ASCII, max_size=20))

HEADERS = st.builds(
    lambda service, legacy, content_type, accept: {
        name: value for name, value in (
            ('OpenStack-API-Version', service),
            ('X-OpenStack-Nova-API-Version', legacy),
            ('Content-Type', content_type),
            ('Accept', accept)) if value is not None},
    st.one_of(st.none(), _SERVICE_HEADER, _SERVICE_HEADER),
    st.one_of(st.none(), st.none(), _VERSION),
    st.sampled_from(_CONTENT_TYPES),
    st.sampled_from([None, 'application/json', '*/*']))

REQUESTS = st.fixed_dictionaries({
    'threshold': st.sampled_from(THRESHOLDS),
    # Nova routes with and without the project id; another project's id
    # gets Nova's 400.
    'path_prefix': st.sampled_from(['', '/' + nova_fixtures.PROJECT_ID,
                                    '/' + OTHER_PROJECT]),
    'body': BODIES,
    'headers': HEADERS,
})


#: The reaper path (issue 25, point 4): ``reaper_min_microversion`` by
#: default, up to the threshold (Nova's maximum by default).
REAPER_FLOOR = '2.57'
#: A hex id, as Keystone's: the filter routes a project id in the URL only
#: when it is one.
REAPER_PROJECT = 'feed5eed' * 4
_REAPER_VERSION = st.sampled_from(
    ['2.%d' % minor for minor in range(57, mv.NOVA_MAX_MINOR)])
#: A reaper's headers: a microversion of the reaper path, JSON.
_REAPER_HEADERS = st.builds(
    lambda version, legacy: dict(
        {'Content-Type': 'application/json'},
        **({'X-OpenStack-Nova-API-Version': version} if legacy else
           {'OpenStack-API-Version': 'compute ' + version})),
    _REAPER_VERSION, st.booleans())

REAPER_REQUESTS = st.sampled_from(['buried', 'buried', 'landed']).flatmap(
    lambda target: st.fixed_dictionaries({
        'target': st.just(target),
        'threshold': st.just(THRESHOLDS[0]),
        'path_prefix': st.sampled_from(['', '/' + REAPER_PROJECT,
                                        '/' + OTHER_PROJECT]),
        'body': BODIES,
        # Any header for the buried server; for the landed one only the
        # reaper path's, where Nova itself would re-image it.
        'headers': (st.one_of(_REAPER_HEADERS, _REAPER_HEADERS, HEADERS)
                    if target == 'buried' else _REAPER_HEADERS),
    }))


# The oracle ----------------------------------------------------------------

def _version(text):
    return api_version_request.APIVersionRequest(text)


class Expected(object):
    """What Nova answers to a request, as far as the test can tell."""

    def __init__(self, statuses, why, version=None, valid=False):
        self.statuses = set(statuses)
        self.why = why
        #: The part of the reason the histogram groups by.
        self.verdict = why.split(':')[0]
        self.version = version
        self.valid = valid


def _schema_for(version):
    for low, high, schema in _SCHEMAS:
        if version.matches(_version(low), _version(high)):
            return schema
    raise AssertionError('no rebuild schema for %s' % version)


def _schema_error(body, version):
    try:
        validators._SchemaValidator(_schema_for(version)).validate(body)
    except nova_exception.ValidationError as exc:
        return exc.format_message()
    return None


def _expect_action(request, size_limit):
    """Nova's answer up to its action lookup, or (version, body)."""
    body = request['raw']
    if len(body) > size_limit:
        return Expected({413}, 'body over max_request_body_size')
    nova_req = nova_openstack_wsgi.Request.blank(
        '/', headers=request['headers'])
    try:
        nova_req.set_api_version_request()
    except nova_exception.InvalidAPIVersionString:
        return Expected({400}, 'malformed version')
    except nova_exception.InvalidGlobalAPIVersion:
        return Expected({406}, 'version out of range')
    version = nova_req.api_version_request
    try:
        nova_req.get_content_type()
    except nova_exception.InvalidContentType:
        return Expected({415}, 'unsupported content type', version)
    try:
        decoded = jsonutils.loads(body)
    except ValueError:
        return Expected({400}, 'not JSON', version)
    # Nova's action_peek: len() and .keys() of whatever was decoded.
    if decoded is None or isinstance(decoded, (bool, int, float)):
        return Expected({404}, 'no len()', version)
    if len(decoded) != 1:
        return Expected({400}, 'not one key', version)
    if not isinstance(decoded, dict):
        return Expected({404}, 'no keys()', version)
    if list(decoded) != ['rebuild']:
        return Expected({400}, 'no such action', version)
    return version, decoded


def expect(request, size_limit):
    """Compute Nova's answer with Nova's own pieces, in Nova's order."""
    result = _expect_action(request, size_limit)
    if isinstance(result, Expected):
        return result
    version, decoded = result
    if request['path_prefix'] == '/' + OTHER_PROJECT:
        return Expected({400}, "another project's id in the URL", version)
    below = version < _version(request['threshold'])
    try:
        error = _schema_error(decoded, version)
    except Exception as exc:
        # Nova's own validator crashes: non-ASCII text in a "base64" field
        # (user_data, personality contents) raises UnicodeDecodeError in
        # nova.api.validation.validators._validate_base64_format, and Nova
        # answers 500 for any server. The filter may do better.
        return Expected({500} if below else {400, 500},
                        'nova validator crash: %s' % type(exc).__name__,
                        version)
    if error is not None:
        return Expected({400}, 'schema: %s' % error, version)
    if below:
        # Nova's own rebuild refuses a server in cell0.
        return Expected({409}, 'below threshold', version)
    rebuild = decoded['rebuild']
    refusals = set()
    if rebuild['imageRef'] not in KNOWN_IMAGES:
        refusals.add(400)
    if rebuild.get('key_name') not in (None, KEY_NAME):
        refusals.add(400)
    if len(rebuild.get('metadata', {})) > METADATA_ITEMS:
        refusals.add(403)
    if _unstorable(rebuild):
        # Nova's schema takes it, no cell database stores it: Nova answers
        # 500 for a server in a cell, the filter 400 before anything moves.
        refusals.add(400)
    if refusals:
        return Expected(refusals, 'refused after the schema', version)
    return Expected({202}, 'valid', version, valid=True)


def expect_reaper(request, size_limit):
    """Nova's answer to a reaper's rebuild (the reaper path, issue 25).

    From ``reaper_min_microversion`` (2.57) up to the threshold the filter
    answers a reaper for any server Nova could rebuild: in Nova's order,
    the body against Nova's schema (400, also where Nova's validator
    crashes), then a server in a real cell is refused (409), never
    re-imaged. Below 2.57 the request is Nova's, as :func:`expect` says.
    """
    result = _expect_action(request, size_limit)
    if isinstance(result, Expected):
        return result
    version, decoded = result
    if request['path_prefix'] == '/' + OTHER_PROJECT:
        return Expected({400}, "another project's id in the URL", version)
    if request['target'] == 'buried':
        expected = expect(dict(request, threshold=REAPER_FLOOR), size_limit)
        if (expected.verdict == 'nova validator crash' and
                version >= _version(REAPER_FLOOR)):
            return Expected({400}, expected.why, version)
        return expected
    # A landed server: only reaper-path versions are sent (see
    # REAPER_REQUESTS), as Nova itself would re-image it.
    try:
        error = _schema_error(decoded, version)
    except Exception as exc:
        return Expected({400}, 'nova validator crash: %s'
                        % type(exc).__name__, version)
    if error is not None:
        return Expected({400}, 'schema: %s' % error, version)
    return Expected({409}, 'landed: not in cell0', version)


# The tests -----------------------------------------------------------------

def _settings(examples=EXAMPLES):
    kwargs = dict(
        max_examples=examples, deadline=None, database=None,
        derandomize=SEED is None, print_blob=True,
        suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture,
                               hypothesis.HealthCheck.too_slow,
                               hypothesis.HealthCheck.data_too_large,
                               hypothesis.HealthCheck.large_base_example])
    return hypothesis.settings(**kwargs)


class _FuzzTestCase(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.api.post_keypair({'keypair': {
            'name': KEY_NAME, 'public_key': crypto.generate_key_pair()[1]}})

    def _load_apps(self):
        """nova-api's app with the filter, once per threshold."""
        apps = {}
        for threshold in THRESHOLDS:
            self.flags(min_microversion=threshold, group='cell0_rebuild')
            apps[threshold] = nova_wsgi.Loader(
                fixture.find_paste_config()).load_app('osapi_compute')
        # The filter keeps the threshold it was loaded with.
        self.flags(min_microversion=THRESHOLDS[0], group='cell0_rebuild')
        return apps

    def _send(self, app, server_id, request, caller=None):
        path = '%s/servers/%s/action' % (request['path_prefix'], server_id)
        headers = caller or {'X-Auth-User': 'fake', 'X-User-Id': 'fake',
                             'X-Auth-Project-Id': self.api.project_id,
                             'X-Roles': 'reader,member'}
        headers = dict(headers, **request['headers'])
        req = webob.Request.blank('/v2.1' + path, method='POST',
                                  headers=headers)
        req.body = request['raw']
        if 'Content-Type' not in request['headers']:
            req.headers.pop('Content-Type', None)
        return req.get_response(app)

    def _state(self, server_id):
        """Everything a refused rebuild must leave as it was."""
        instance = self._cell0_instance(server_id)
        build_request = self._build_request_row_exists(server_id)
        with db_api.reader(self.admin_context) as session:
            records = sorted(
                tuple(getattr(row, c.name) for c in row.__table__.columns)
                for row in session.query(models.CreateRecord))
            journal = sorted(
                tuple(getattr(row, c.name) for c in row.__table__.columns)
                for row in session.query(models.MoveJournal))
        return {
            'instance': instance.obj_to_primitive(),
            'vm_state': instance.vm_state,
            'updated_at': instance.updated_at,
            'mapped_cell': self._mapped_cell_uuid(server_id),
            'cell0_rows': self._cell0_rows(server_id),
            'build_request': build_request,
            'create_records': records,
            'move_journal': journal,
        }

    def _assert_buried(self, state):
        self.assertEqual('error', state['vm_state'])
        self.assertEqual(CELL0, state['mapped_cell'])
        self.assertFalse(state['build_request'])
        self.assertTrue(state['cell0_rows'])
        self.assertEqual(1, len(state['create_records']))

    def _settle(self, server_id, timeout=30):
        """Wait until the server is buried again and nothing moves."""
        deadline = time.monotonic() + timeout
        previous = None
        while time.monotonic() < deadline:
            try:
                state = self._state(server_id)
            except nova_exception.InstanceNotFound:
                state = None
            if (state is not None and state == previous and
                    state['vm_state'] == 'error' and
                    state['mapped_cell'] == CELL0 and
                    not state['build_request']):
                return state
            previous = state
            time.sleep(0.05)
        self.fail('server %s was not buried again within %ss: %s'
                  % (server_id, timeout, previous))

    def _assert_nova_fault(self, resp, expected):
        try:
            body = jsonutils.loads(resp.body)
        except ValueError:
            self.fail('%s is not JSON: %r' % (resp.status, resp.body[:200]))
        self.assertIsInstance(body, dict)
        self.assertEqual(1, len(body), body)
        fault = list(body.values())[0]
        self.assertEqual(resp.status_int, fault['code'], body)
        self.assertIsInstance(fault['message'], str)
        self.assertTrue(fault['message'])
        if (resp.status_int < 500 and expected.version is not None and
                not expected.version.is_null()):
            self.assertEqual(
                'compute %s' % expected.version.get_string(),
                resp.headers.get('OpenStack-API-Version'))

    def _assert_accepted(self, resp, server_id, expected):
        server = resp.json['server']
        self.assertEqual(server_id, server['id'])
        self.assertEqual('BUILD', server['status'])
        self.assertEqual('compute %s' % expected.version.get_string(),
                         resp.headers['OpenStack-API-Version'])

    def _run(self, check, seen, examples):
        """Run a hypothesis test, seeded if asked, and report what it saw.
        """
        if SEED is not None:
            check = hypothesis.seed(int(SEED))(check)
        try:
            check()
        finally:
            report = self._histogram(seen, examples)
            self.addDetail('fuzz-histogram', content.text_content(report))
            if REPORT:
                sys.stdout.write(report)
                sys.stdout.flush()
        self.assertGreaterEqual(len(seen), examples)

    def _histogram(self, seen, examples):
        lines = ['%s: %d requests (max_examples=%d, seed=%s)'
                 % (type(self).__name__, len(seen), examples,
                    SEED or 'derandomized')]
        for title, key in (
                ('status histogram', lambda s: (s[2],)),
                ('by body kind and status', lambda s: (s[0], s[2])),
                ("by Nova's expected answer and status",
                 lambda s: (s[1], s[2]))):
            lines.append(title + ':')
            counts = collections.Counter(key(s) for s in seen)
            lines += ['  %s: %d' % (' '.join('%-32s' % k for k in keys[:-1])
                                    + str(keys[-1]), count)
                      for keys, count in sorted(counts.items())]
        return '\n'.join(lines) + '\n'


class FuzzRebuildTest(_FuzzTestCase):
    """One buried server, every generated request, both thresholds."""

    def test_fuzz_rebuild_requests(self):
        apps = self._load_apps()
        size_limit = CONF.oslo_middleware.max_request_body_size
        server_id = self._create_buried_server()['id']
        baseline = self._settle(server_id)
        self._assert_buried(baseline)
        state = {'baseline': baseline}
        seen = []

        @_settings()
        @hypothesis.given(request=REQUESTS)
        def check(request):
            kind, request['raw'] = request['body']
            expected = expect(request, size_limit)
            resp = self._send(apps[request['threshold']], server_id, request)
            seen.append((kind, expected.verdict, resp.status_int))
            if REPORT and not len(seen) % 1000:
                sys.stdout.write('%d requests\n' % len(seen))
                sys.stdout.flush()
            if resp.status_int == 202:
                # Buried again (no compute), whatever the assertions say.
                state['baseline'] = self._settle(server_id)
            why = '%s; %s -> %s %r' % (expected.why, request['headers'],
                                       resp.status, resp.body[:300])
            if 500 not in expected.statuses:
                self.assertLess(resp.status_int, 500, why)
            self.assertIn(resp.status_int, expected.statuses, why)
            if resp.status_int == 202:
                self.assertTrue(expected.valid, why)
                self._assert_accepted(resp, server_id, expected)
                return
            if resp.status_int == 413:
                self.assertIn('Request Entity Too Large', resp.text)
            else:
                self._assert_nova_fault(resp, expected)
            self.assertEqual(state['baseline'], self._state(server_id), why)

        self._run(check, seen, EXAMPLES)
        self._assert_buried(self._state(server_id))


class NovaParityTest(_FuzzTestCase):
    """What the fuzzing found the filter once answering unlike Nova.

    * Requests Nova refuses before it looks at the action, whatever the
      server: an unsupported Content-Type (415) and another project's id
      in the URL (400). The filter once handled them as rebuilds (202).
    * Text Nova's schema takes but no database can store (a lone
      surrogate): the filter once answered 202, then the conductor could
      not bury the server again and it stayed in BUILD, mapped to no cell.
    """

    def _compare_with_nova(self, path_prefix='', **headers):
        server_id = self._create_buried_server()['id']
        without_filter = fixture.write_paste_config_without_filter(
            self.useFixture(fixtures_lib.TempDir()).path)
        nova_app = nova_wsgi.Loader(without_filter).load_app('osapi_compute')
        request = {
            'raw': _dump({'rebuild': {'imageRef': KNOWN_IMAGES[0]}}),
            'headers': dict({'OpenStack-API-Version': 'compute ' + mv.NOVA_MAX,
                             'Content-Type': 'application/json'},
                            **headers),
            'path_prefix': path_prefix}
        before = self._settle(server_id)
        nova = self._send(nova_app, server_id, request)
        resp = self._send(self._load_apps()[THRESHOLDS[0]], server_id,
                          request)
        if resp.status_int == 202:
            self._settle(server_id)

        self.assertEqual((nova.status_int, nova.json),
                         (resp.status_int, resp.json))
        self.assertEqual(before, self._state(server_id))

    def test_unsupported_content_type_gets_nova_415(self):
        self._compare_with_nova(**{'Content-Type': 'application/xml'})

    def test_other_project_in_url_gets_nova_400(self):
        self._compare_with_nova(path_prefix='/abcdef0123')

    def test_unstorable_metadata_is_refused_and_nothing_moves(self):
        server_id = self._create_buried_server()['id']
        request = {
            'raw': _dump({'rebuild': {'imageRef': KNOWN_IMAGES[0],
                                      'metadata': {'k': '\ud800'}}}),
            'headers': {'OpenStack-API-Version': 'compute ' + mv.NOVA_MAX,
                        'Content-Type': 'application/json'},
            'path_prefix': ''}
        before = self._settle(server_id)
        resp = self._send(self._load_apps()[THRESHOLDS[0]], server_id,
                          request)
        self.assertEqual(400, resp.status_int, resp.body)
        self.assertIn('metadata', resp.json['badRequest']['message'])
        self.assertEqual(before, self._state(server_id))


class FuzzReaperRebuildTest(_FuzzTestCase):
    """The reaper path: a reaper's rebuilds of a buried and a landed server.

    Issue 25, point 4: bodies that are no object reached the body's
    inspection before Nova's schema (500). Every answer here is Nova's
    (:func:`expect_reaper`), never a 5xx, every refusal a Nova fault, and
    nothing changes on a refusal: neither the buried server nor the landed
    one (which the reaper path must never re-image).
    """

    #: A quarter of the rebuild fuzzing's examples (125 by default).
    examples = max(1, EXAMPLES // 4)

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        roles = ['service', 'admin', 'member', 'reader']
        self.reaper = {'X-Auth-User': 'admin', 'X-User-Id': 'admin',
                       'X-Auth-Project-Id': REAPER_PROJECT,
                       'X-Roles': ','.join(roles)}
        # Key pairs are the caller's: the reaper has one of the same name.
        self._client('admin', REAPER_PROJECT, roles).post_keypair(
            {'keypair': {'name': KEY_NAME,
                         'public_key': crypto.generate_key_pair()[1]}})

    def _landed(self, server_id):
        view = self.admin_api.get_server(server_id)
        return (view['updated'], view['image'], view['status'],
                self._mapped_cell_uuid(server_id))

    def test_fuzz_reaper_rebuild_requests(self):
        app = self._load_apps()[THRESHOLDS[0]]
        size_limit = CONF.oslo_middleware.max_request_body_size
        server_id = self._create_buried_server()['id']
        self._start_compute('host1')
        landed_id = self._create_server(networks='none')['id']
        # No room again: a rebuild of the buried server is buried again.
        self._set_capacity(False)
        state = {'baseline': self._settle(server_id)}
        landed = self._landed(landed_id)
        seen = []

        @_settings(self.examples)
        @hypothesis.given(request=REAPER_REQUESTS)
        def check(request):
            kind, request['raw'] = request['body']
            expected = expect_reaper(request, size_limit)
            target = (server_id if request['target'] == 'buried'
                      else landed_id)
            resp = self._send(app, target, request, caller=self.reaper)
            seen.append((request['target'] + ' ' + kind, expected.verdict,
                         resp.status_int))
            if resp.status_int == 202:
                state['baseline'] = self._settle(server_id)
            why = '%s; %s -> %s %r' % (expected.why, request['headers'],
                                       resp.status, resp.body[:300])
            self.assertLess(resp.status_int, 500, why)
            self.assertIn(resp.status_int, expected.statuses, why)
            self.assertEqual(landed, self._landed(landed_id), why)
            if resp.status_int == 202:
                self.assertTrue(expected.valid, why)
                self._assert_accepted(resp, server_id, expected)
                return
            if resp.status_int == 413:
                self.assertIn('Request Entity Too Large', resp.text)
            else:
                self._assert_nova_fault(resp, expected)
            self.assertEqual(state['baseline'], self._state(server_id), why)

        self._run(check, seen, self.examples)
        final = self._state(server_id)
        self.assertEqual(('error', CELL0, False),
                         (final['vm_state'], final['mapped_cell'],
                          final['build_request']))
        self.assertEqual(landed, self._landed(landed_id))
