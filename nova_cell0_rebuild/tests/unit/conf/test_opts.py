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

"""The plugin's option groups and their discovery."""

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.conf import cell0_rebuild
from nova_cell0_rebuild.conf import cell0_rebuild_pending
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
                          'cell0_rebuild_relay', 'cell0_rebuild_pending'],
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


class TestPendingOptions(base.BaseTestCase):
    """[cell0_rebuild_pending]: the spec's table, pending.rst."""

    #: name: (default, min, max) as the spec's table states them.
    SPEC = {
        'enabled': (False, None, None),
        'projects': (['*'], None, None),
        'max_wait_seconds': (604800, 60, 7776000),
        'backoff_initial_seconds': (1.0, 0.1, 60),
        'backoff_max_seconds': (300, 1, 3600),
        'sweep_interval_seconds': (300, 10, 86400),
        'event_delay_seconds': (0.2, 0, 10),
        'late_event_recheck_seconds': (10, 1, 600),
        'max_in_flight': (10, 1, 1000),
        'settle_timeout_seconds': (120, 10, 3600),
        'reserve_after_seconds': (900, 0, 604800),
        'reserve_for_seconds': (300, 10, 86400),
        'shape_ttl_seconds': (3600, 60, 86400),
        'listener_pool': ('nova-cell0-rebuild-pending', None, None),
        'coordination_url': (None, None, None),
    }

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(
            config_fixture.Config(cfg.ConfigOpts())).conf
        # nova-api's registration: the opt-in reads this group there.
        plugin_conf.register_opts(self.conf)

    def test_listed_with_help(self):
        group, options = opts.list_opts()[3]
        self.assertEqual('cell0_rebuild_pending', group.name)
        self.assertTrue(group.help.strip())
        self.assertEqual(set(self.SPEC), {opt.name for opt in options})
        self.assertTrue(all(opt.help.strip() for opt in options))

    def test_defaults_are_the_specs(self):
        group = self.conf.cell0_rebuild_pending
        for name, (default, _, _) in self.SPEC.items():
            self.assertEqual(default, group[name], name)
        self.assertFalse(group.enabled)

    def test_bounds_are_the_specs(self):
        for name, (_, low, high) in self.SPEC.items():
            if low is None:
                continue
            kind = type(self.SPEC[name][0])
            step = 0.01 if kind is float else 1
            for ok in (low, high):
                self.conf.set_override(name, kind(ok),
                                       group='cell0_rebuild_pending')
                self.assertEqual(kind(ok),
                                 self.conf.cell0_rebuild_pending[name])
            for bad in (low - step, high + step):
                self.assertRaises(ValueError, self.conf.set_override,
                                  name, kind(bad),
                                  group='cell0_rebuild_pending')

    def test_types(self):
        by_name = {opt.name: opt for opt in cell0_rebuild_pending.ALL_OPTS}
        self.assertIsInstance(by_name['enabled'], cfg.BoolOpt)
        self.assertIsInstance(by_name['projects'], cfg.ListOpt)
        for name in ('backoff_initial_seconds', 'event_delay_seconds'):
            self.assertIsInstance(by_name[name], cfg.FloatOpt)
        for name in ('listener_pool', 'coordination_url'):
            self.assertIsInstance(by_name[name], cfg.StrOpt)
        ints = set(self.SPEC) - {
            'enabled', 'projects', 'backoff_initial_seconds',
            'event_delay_seconds', 'listener_pool', 'coordination_url'}
        for name in ints:
            self.assertIsInstance(by_name[name], cfg.IntOpt, name)

    def test_coordination_url_is_secret(self):
        # A tooz URL may carry a password (redis://:secret@host).
        by_name = {opt.name: opt for opt in cell0_rebuild_pending.ALL_OPTS}
        self.assertTrue(by_name['coordination_url'].secret)

    def test_projects_read_from_a_file(self):
        self.conf.set_override('projects', 'p1,p2',
                               group='cell0_rebuild_pending')
        self.assertEqual(['p1', 'p2'],
                         self.conf.cell0_rebuild_pending.projects)
