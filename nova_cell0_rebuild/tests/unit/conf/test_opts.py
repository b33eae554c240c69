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

"""The [cell0_rebuild] and [cell0_rebuild_client] options, their discovery."""

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.conf import cell0_rebuild
from nova_cell0_rebuild.conf import opts


class TestOptions(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        # A private ConfigOpts: registration never needs the global one.
        self.conf = self.useFixture(
            config_fixture.Config(cfg.ConfigOpts())).conf
        plugin_conf.register_opts(self.conf)

    def test_defaults(self):
        group = self.conf.cell0_rebuild
        self.assertIsNone(group.min_microversion)
        self.assertEqual('2.57', group.reaper_min_microversion)
        self.assertEqual(['state', 'lock', 'fault', 'record', 'personality',
                          'quota'], group.enabled_gates)
        self.assertFalse(group.allow_unrecorded)
        self.assertIsNone(group.connection)
        self.assertEqual(300, group.move_lease_seconds)
        self.assertEqual(3600, group.hand_off_timeout)

    def test_microversions_are_checked_by_the_plugin(self):
        # Not by oslo.config, whose message would name its internals:
        # api.microversion_settings.check_min_microversion says what is
        # accepted.
        for name in ('min_microversion', 'reaper_min_microversion'):
            self.conf.set_override(name, '2.x', group='cell0_rebuild')
            self.assertEqual('2.x', self.conf.cell0_rebuild[name])

    def test_move_lease_is_bounded(self):
        for value in (9, 86401):
            self.assertRaises(ValueError, self.conf.set_override,
                              'move_lease_seconds', value,
                              group='cell0_rebuild')

    def test_hand_off_timeout_is_bounded(self):
        # A floor against a typo; what is safe depends on Nova's
        # long_rpc_timeout, which the upgrade check compares it with.
        self.assertRaises(ValueError, self.conf.set_override,
                          'hand_off_timeout', 29, group='cell0_rebuild')

    def test_list_opts_names_every_option(self):
        listed = opts.list_opts()
        self.assertEqual(['cell0_rebuild', 'cell0_rebuild_client',
                          'cell0_rebuild_relay'],
                         [group.name for group, _ in listed])
        group, options = listed[0]
        self.assertEqual(
            {'min_microversion', 'reaper_min_microversion', 'enabled_gates',
             'allow_unrecorded', 'move_lease_seconds', 'hand_off_timeout',
             'connection', 'notification_retries', 'notification_timeout'},
            {opt.name for opt in options})
        self.assertTrue(all(opt.help.strip() for opt in options))

    def test_relay_options_are_listed_with_help(self):
        group, options = opts.list_opts()[2]
        self.assertTrue(group.help.strip())
        self.assertEqual(
            {'aardvark_events', 'publish_topics', 'publish_transport_url',
             'listener_pool', 'state_update_delay', 'announce_lease_seconds'},
            {opt.name for opt in options})
        self.assertTrue(all(opt.help.strip() for opt in options))

    def test_client_options_are_keystoneauths(self):
        group, options = opts.list_opts()[1]
        self.assertTrue(group.help.strip())
        names = {opt.dest for opt in options}
        self.assertLessEqual(
            {'auth_type', 'auth_section', 'auth_url', 'username', 'password',
             'project_name', 'user_domain_name', 'project_domain_name',
             'cafile', 'insecure', 'timeout'}, names)
        self.assertTrue([o for o in options if o.name == 'password'][0].secret)

    def test_client_section_registers_what_keystoneauth_loads_from(self):
        group = self.conf.cell0_rebuild_client
        self.assertIsNone(group.auth_type)
        self.assertIsNone(group.auth_section)
        self.assertFalse(group.insecure)

    def test_connection_is_secret(self):
        self.assertTrue(
            [o for o in cell0_rebuild.ALL_OPTS
             if o.name == 'connection'][0].secret)
