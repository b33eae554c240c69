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

"""Where the filter sits in a paste file, read as nova-api would."""

import os

import fixtures
from oslotest import base

import nova_cell0_rebuild
from nova_cell0_rebuild.api import pipeline_position as position

#: The paste file the project ships: Nova's own, with the filter added.
SHIPPED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(
        nova_cell0_rebuild.__file__))),
    'etc', 'nova-cell0-rebuild', 'api-paste.ini')

V21 = 'openstack_compute_api_v21'
LEGACY = 'openstack_compute_api_v21_legacy_v2_compatible'

V21_LINE = ('keystone = cors http_proxy_to_wsgi compute_req_id faultwrap '
            'request_log sizelimit osprofiler authtoken keystonecontext '
            'cell0_rebuild osapi_compute_app_v21')
LEGACY_TAIL = 'keystonecontext cell0_rebuild legacy_v2_compatible'


def shipped_text():
    with open(SHIPPED) as paste:
        return paste.read()


def variant(*replacements):
    """The shipped paste file with (old, new) text replacements."""
    text = shipped_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    return text


class PositionsTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _positions(self, text):
        path = os.path.join(self.tmp, 'api-paste.ini')
        with open(path, 'w') as paste:
            paste.write(text)
        return position.positions(path)

    def test_shipped_file(self):
        self.assertEqual({V21: position.RIGHT_AFTER_CONTEXT,
                          LEGACY: position.RIGHT_AFTER_CONTEXT},
                         position.positions(SHIPPED))

    def test_nova_31_and_older_keep_noauth2_pipelines(self):
        # Their composites also name a deprecated noauth2 pipeline, which
        # nova-api runs only with [api] auth_strategy = noauth2.
        noauth2 = ('\nnoauth2 = cors http_proxy_to_wsgi compute_req_id '
                   'faultwrap request_log sizelimit osprofiler noauth2 '
                   'osapi_compute_app_v21')
        text = variant((V21_LINE, V21_LINE + noauth2),
                       (LEGACY_TAIL + ' osapi_compute_app_v21',
                        LEGACY_TAIL + ' osapi_compute_app_v21' + noauth2))
        self.assertEqual({V21: position.RIGHT_AFTER_CONTEXT,
                          LEGACY: position.RIGHT_AFTER_CONTEXT},
                         self._positions(text))

    def test_after_another_filter(self):
        text = variant((LEGACY_TAIL, 'keystonecontext legacy_v2_compatible '
                        'cell0_rebuild'))
        self.assertEqual({V21: position.RIGHT_AFTER_CONTEXT,
                          LEGACY: position.LATER}, self._positions(text))

    def test_missing_from_one_pipeline(self):
        text = variant((V21_LINE, V21_LINE.replace(' cell0_rebuild', '')))
        self.assertEqual({V21: position.MISSING,
                          LEGACY: position.RIGHT_AFTER_CONTEXT},
                         self._positions(text))

    def test_before_keystonecontext(self):
        text = variant((V21_LINE, V21_LINE.replace(
            'authtoken keystonecontext cell0_rebuild',
            'cell0_rebuild authtoken keystonecontext')))
        self.assertEqual(position.BEFORE_CONTEXT,
                         self._positions(text)[V21])

    def test_twice(self):
        text = variant((LEGACY_TAIL, LEGACY_TAIL + ' cell0_rebuild'))
        self.assertEqual(position.TWICE, self._positions(text)[LEGACY])

    def test_any_section_name_that_loads_the_filter(self):
        text = variant(('[filter:cell0_rebuild]\n'
                        'use = egg:nova-cell0-rebuild#cell0_rebuild',
                        '[filter:c0r]\npaste.filter_factory = '
                        'nova_cell0_rebuild.api.filter:filter_factory'),
                       (V21_LINE, V21_LINE.replace('cell0_rebuild', 'c0r')),
                       (LEGACY_TAIL, LEGACY_TAIL.replace('cell0_rebuild',
                                                         'c0r')))
        self.assertEqual({V21: position.RIGHT_AFTER_CONTEXT,
                          LEGACY: position.RIGHT_AFTER_CONTEXT},
                         self._positions(text))

    def test_a_section_named_cell0_rebuild_that_loads_something_else(self):
        text = variant(('use = egg:nova-cell0-rebuild#cell0_rebuild',
                        'paste.filter_factory = other:factory'))
        self.assertEqual({V21: position.MISSING, LEGACY: position.MISSING},
                         self._positions(text))

    def test_a_plain_pipeline_section(self):
        text = variant(
            ('[composite:openstack_compute_api_v21]\n'
             'use = call:nova.api.auth:pipeline_factory_v21\n' + V21_LINE,
             '[pipeline:openstack_compute_api_v21]\npipeline = '
             + V21_LINE.split(' = ', 1)[1]))
        self.assertEqual(position.RIGHT_AFTER_CONTEXT,
                         self._positions(text)[V21])

    def test_an_api_mounted_straight_to_an_app(self):
        text = variant(('/v2.1/+: openstack_compute_api_v21',
                        '/v2.1/+: osapi_compute_app_v21'))
        self.assertEqual(position.UNREADABLE,
                         self._positions(text)['osapi_compute_app_v21'])

    def test_only_the_mounted_pipelines_count(self):
        text = variant(('/v2/+: openstack_compute_api_v21_legacy_v2_'
                        'compatible\n', ''))
        self.assertEqual({V21: position.RIGHT_AFTER_CONTEXT},
                         self._positions(text))

    def test_not_nova_api_paste_file(self):
        text = variant(('[composite:osapi_compute]', '[composite:other]'))
        self.assertRaises(position.PasteFileError, self._positions, text)

    def test_not_a_paste_file(self):
        self.assertRaises(position.PasteFileError, self._positions,
                          'keystone = keystonecontext cell0_rebuild\n')

    def test_no_file(self):
        self.assertRaises(position.PasteFileError, position.positions,
                          os.path.join(self.tmp, 'nowhere.ini'))
