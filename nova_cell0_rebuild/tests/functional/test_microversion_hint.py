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

"""Nova's 409 below the threshold names the microversion that would do.

``[cell0_rebuild] min_microversion`` is left at its default, the installed
Nova's maximum. A member's rebuild of their buried server at a lower
microversion (a client's default) is Nova's: 409 "invalid state for
'rebuild'". When a rebuild at the threshold would move it, that 409 keeps
Nova's code and message and goes on to name the threshold and the user
guide's page; every other answer is Nova's, word for word.
"""

import base64

from nova_cell0_rebuild.api import microversion_hint
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests import microversions as mv

CELL0 = '00000000-0000-0000-0000-000000000000'
#: Below the threshold: a client's default, Aardvark's, the reaper path's
#: floor, the last one with personality files and the one just below.
BELOW = ('2.1', '2.37', '2.56', '2.57', '2.65', mv.BELOW_NOVA_MAX)


class MicroversionHintTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        owner = self.api.project_id
        self.member = self._client('fake', owner, ['member', 'reader'])
        self.hint = microversion_hint.hint(mv.NOVA_MAX)

    def _fault(self, resp, status=409, kind='conflictingRequest'):
        self.assertEqual(status, resp.status, resp.body)
        self.assertEqual([kind], list(resp.body), resp.body)
        self.assertEqual(status, resp.body[kind]['code'])
        return resp.body[kind]['message']

    def test_below_the_threshold_the_409_names_the_threshold(self):
        server = self._create_buried_server()
        for version in BELOW:
            resp = self._rebuild(server['id'], microversion=version,
                                 api=self.member)
            message = self._fault(resp)
            # Nova's own message first, unchanged, then the hint.
            nova, _, hint = message.partition(' This server is in cell0')
            self.assertIn("is in an invalid state for 'rebuild'", nova,
                          version)
            self.assertEqual(self.hint, message[len(nova) + 1:], version)
            self.assertIn('at compute API microversion %s or later'
                          % mv.NOVA_MAX, message)
            self.assertIn('user/rebuild-from-cell0', message)
            self.assertEqual('compute ' + version,
                             resp.headers['openstack-api-version'])
            self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))

    def test_at_the_threshold_the_plugin_rebuilds(self):
        server = self._create_buried_server()
        resp = self._rebuild(server['id'], microversion=mv.NOVA_MAX,
                             api=self.member)
        self.assertEqual(202, resp.status, resp.body)

    def test_no_hint_for_a_server_in_a_real_cell(self):
        self._start_compute('host1')
        server = self._create_server(networks='none')
        self.api.post_server_action(server['id'], {'lock': {}})
        for version in ('2.1', mv.BELOW_NOVA_MAX):
            message = self._fault(self._rebuild(
                server['id'], microversion=version, api=self.member))
            self.assertIn('is locked', message)
            self.assertNotIn('cell0', message)

    def test_no_hint_when_the_gates_refuse(self):
        # Created with personality files: no microversion rebuilds it.
        files = self._create_buried_server(
            microversion='2.1',
            networks=[{'uuid': self.neutron.network_1['id']}],
            personality=[{
                'path': '/etc/motd',
                'contents': base64.b64encode(b'hi').decode()}])
        # Locked by its owner: refused to its members at the threshold too.
        locked = self._create_buried_server()
        self.api.post_server_action(locked['id'], {'lock': {}})
        for server in (files, locked):
            message = self._fault(self._rebuild(
                server['id'], microversion='2.1', api=self.member))
            self.assertNotIn('This server is in cell0', message)
            self.assertNotIn('microversion', message)

    def test_no_hint_for_those_who_may_not_rebuild_it(self):
        server = self._create_buried_server()
        reader = self._client('reader', self.api.project_id, ['reader'])
        other = self._client('other', 'other-project', ['member', 'reader'])
        self._fault(self._rebuild(server['id'], microversion='2.1',
                                  api=reader), 403, 'forbidden')
        self._fault(self._rebuild(server['id'], microversion='2.1',
                                  api=other), 404, 'itemNotFound')
