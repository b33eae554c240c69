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

"""The reaper path: a stock client's microversion, for a reaper only.

``[cell0_rebuild] min_microversion`` is left at its default (the installed
Nova's maximum), which no stock client sends. A caller that holds
``cell0_rebuild:servers:rebuild_from_cell0:reaper`` (by default the
``service`` role) rebuilds a buried server at the microversion its client
sends (here Aardvark's 2.65), from ``reaper_min_microversion`` up; and a
server that is not in cell0 is refused, never re-imaged. Everyone else
below the threshold gets Nova's own answer.

Nova's new policy defaults are on, as in test_policy_matrix. The reaper is
a user of the service project with the ``service`` and ``admin`` roles:
Nova's ``os_compute_api:servers:rebuild`` is ``project_member_or_admin``,
and a reaper rebuilds servers of every project, as Aardvark does.
"""

import re


from nova_cell0_rebuild.tests.functional import base

CELL0 = '00000000-0000-0000-0000-000000000000'
REAPER_VERSION = '2.65'
#: Spelled out: the policy name is public contract.
REAPER_RULE = 'cell0_rebuild:servers:rebuild_from_cell0:reaper'
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def _masked(body):
    return _UUID.sub('UUID', str(body))


def _reaper_client(test):
    """A reaper: the service and admin roles in the service project."""
    # Nova's test context is an admin one for the user named admin only
    # (is_admin: what Keystone's admin role gives in a real Nova).
    return test._client('admin', 'service',
                        ['service', 'admin', 'member', 'reader'])


class ReaperPathTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()
        owner = self.api.project_id
        self.reaper = _reaper_client(self)
        self.member = self._client('fake', owner, ['member', 'reader'])
        self.admin = self._client('admin', owner,
                                  ['admin', 'member', 'reader'])
        self.service_only = self._client('svc', owner, ['service'])

    def _untouched(self, server_id):
        view = self.admin_api.get_server(server_id)
        return (view['updated'], view['image'], view['status'],
                view.get('OS-SRV-USG:launched_at'),
                self._mapped_cell_uuid(server_id))

    def _novas_answer(self, server_id, version):
        """What Nova answers a member's rebuild at *version*: its own."""
        resp = self._rebuild(server_id, microversion=version,
                             api=self.member)
        self.assertEqual(409, resp.status, resp.body)
        self.assertIn('is in an invalid state for',
                      resp.body['conflictingRequest']['message'])
        return resp

    def _assert_novas_answer(self, server_id, api, version=REAPER_VERSION):
        before = self._untouched(server_id)
        expected = self._novas_answer(server_id, version)
        resp = self._rebuild(server_id, microversion=version, api=api)
        self.assertEqual(expected.status, resp.status, resp.body)
        self.assertEqual(_masked(expected.body), _masked(resp.body))
        self.assertEqual(before, self._untouched(server_id))
        self.assertEqual(CELL0, self._mapped_cell_uuid(server_id))

    def test_reaper_rebuilds_at_its_microversion(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        resp = self._rebuild(server['id'], microversion=REAPER_VERSION,
                             api=self.reaper)
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual(server['id'], resp.body['server']['id'])
        self.assertEqual('BUILD', resp.body['server']['status'])
        # Nova's view for the microversion the reaper sent.
        self.assertEqual('compute ' + REAPER_VERSION,
                         resp.headers['openstack-api-version'])
        # (user_data from 2.57; the extended attributes from 2.75 only).
        self.assertIn('user_data', resp.body['server'])
        self.assertNotIn('OS-EXT-STS:vm_state', resp.body['server'])
        self.assertNotIn('server_groups', resp.body['server'])
        active = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(server['id'], active['id'])
        self.assertEqual(self.cell_mappings['cell1'].uuid,
                         self._mapped_cell_uuid(server['id']))

    def test_retry_after_landing_is_refused_not_reimaged(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(
            server['id'], microversion=REAPER_VERSION,
            api=self.reaper).status)
        self._wait_for_state_change(server, 'ACTIVE')
        before = self._untouched(server['id'])
        actions = self.admin_api.get_instance_actions(server['id'])

        # The reaper's retry, with another image: Nova would re-image.
        resp = self._rebuild(server['id'],
                             body={'imageRef': self.glance.image2['id']},
                             microversion=REAPER_VERSION, api=self.reaper)
        self.assertEqual(409, resp.status, resp.body)
        fault = resp.body['conflictingRequest']
        self.assertEqual(409, fault['code'])
        self.assertIn('is not in cell0', fault['message'])
        self.assertIn(server['id'], fault['message'])
        self.assertEqual('compute ' + REAPER_VERSION,
                         resp.headers['openstack-api-version'])
        self.assertEqual(before, self._untouched(server['id']))
        self.assertEqual(
            actions, self.admin_api.get_instance_actions(server['id']))

    def test_at_the_threshold_a_landed_server_is_novas_to_rebuild(self):
        # Why the reaper path exists: at the threshold, a second rebuild
        # after the move is Nova's ordinary rebuild, a re-image.
        server = self._create_buried_server()
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(server['id'],
                                            api=self.reaper).status)
        self._wait_for_state_change(server, 'ACTIVE')
        resp = self._rebuild(server['id'], api=self.reaper)
        self.assertEqual(202, resp.status, resp.body)
        self.assertEqual('REBUILD', resp.body['server']['status'])
        self._wait_for_state_change(server, 'ACTIVE')

    def test_others_below_the_threshold_get_novas_answer(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        # A project admin without the service role, and a service user
        # without Nova's rebuild rule (Nova's 403).
        self._assert_novas_answer(server['id'], self.admin)
        resp = self._rebuild(server['id'], microversion=REAPER_VERSION,
                             api=self.service_only)
        self.assertEqual(403, resp.status, resp.body)
        self.assertIn('os_compute_api:servers:rebuild',
                      resp.body['forbidden']['message'])
        self.assertEqual(CELL0, self._mapped_cell_uuid(server['id']))

    def test_reaper_below_its_floor_gets_novas_answer(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self._assert_novas_answer(server['id'], self.reaper, version='2.56')

    def test_rule_overridden_to_nobody_leaves_the_reaper_to_nova(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self.policy.set_rules({REAPER_RULE: '!'}, overwrite=False)
        self._assert_novas_answer(server['id'], self.reaper)

    def test_reaper_of_a_server_nova_does_not_know_gets_novas_404(self):
        resp = self._rebuild('9a1f0c2e-5b7d-4e8a-b3c6-0d2e4f6a8b1c',
                             microversion=REAPER_VERSION, api=self.reaper)
        self.assertEqual(404, resp.status, resp.body)
        self.assertEqual(404, resp.body['itemNotFound']['code'])


class ReaperFloorTest(base.Cell0RebuildTestCase):
    """A raised reaper_min_microversion: the reaper's 2.65 is Nova's."""

    cell0_rebuild_conf = {'reaper_min_microversion': '2.66'}

    def test_reaper_below_the_configured_floor_gets_novas_answer(self):
        self._enforce_new_policy_defaults()
        reaper = _reaper_client(self)
        server = self._create_buried_server()
        resp = self._rebuild(server['id'], microversion=REAPER_VERSION,
                             api=reaper)
        self.assertEqual(409, resp.status, resp.body)
        self.assertIn('is in an invalid state for',
                      resp.body['conflictingRequest']['message'])
        resp = self._rebuild(server['id'], microversion='2.66', api=reaper)
        self.assertEqual(202, resp.status, resp.body)
