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

"""nova-api refuses to start with a wrong [cell0_rebuild] setting."""

from nova_cell0_rebuild.api import filter as cell0_filter
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.tests import microversions as mv
from nova_cell0_rebuild.tests.unit import base


def _nova(environ, start_response):
    start_response('204 No Content', [])
    return [b'']


class TestFilterFactory(base.TestCase):

    def _override(self, name, value):
        self.conf.set_override(name, value, group='cell0_rebuild')

    def test_default_configuration_starts(self):
        app = cell0_filter.filter_factory({})(_nova)
        self.assertIsInstance(app, cell0_filter.Cell0RebuildFilter)
        self.assertIs(_nova, app.application)
        self.assertEqual(mv.NOVA_MAX, app.rebuild.min_version.get_string())
        self.assertEqual(
            ['state', 'lock', 'fault', 'record', 'personality', 'quota'],
            app.rebuild.gates.names)

    def test_configured_threshold_is_used(self):
        self._override('min_microversion', '2.65')
        app = cell0_filter.filter_factory({})(_nova)
        self.assertEqual('2.65', app.rebuild.min_version.get_string())

    def test_threshold_below_2_57_stops_the_start(self):
        self._override('min_microversion', '2.56')
        error = self.assertRaises(exception.InvalidConfiguration,
                                  cell0_filter.filter_factory, {})
        self.assertIn('min_microversion 2.56 is outside 2.57 .. '
                      + mv.NOVA_MAX, str(error))

    def test_threshold_above_novas_maximum_stops_the_start(self):
        self._override('min_microversion', mv.ABOVE_NOVA_MAX)
        error = self.assertRaises(exception.InvalidConfiguration,
                                  cell0_filter.filter_factory, {})
        self.assertIn('min_microversion %s is outside 2.57 .. %s'
                      % (mv.ABOVE_NOVA_MAX, mv.NOVA_MAX), str(error))

    def test_malformed_threshold_stops_the_start_in_one_line(self):
        for name, highest in (
                ('min_microversion', 'the maximum of the installed Nova'),
                ('reaper_min_microversion',
                 'the effective min_microversion')):
            self._override(name, '2.6x')
            error = self.assertRaises(exception.InvalidConfiguration,
                                      cell0_filter.filter_factory, {})
            self.assertEqual(
                "Invalid [cell0_rebuild] configuration: %s '2.6x' is not a "
                "microversion: give 2.N, from 2.57 to %s, %s"
                % (name, mv.NOVA_MAX, highest), str(error))
            self.conf.clear_override(name, group='cell0_rebuild')

    def test_reaper_floor_defaults_to_2_57(self):
        app = cell0_filter.filter_factory({})(_nova)
        self.assertEqual('2.57',
                         app.rebuild.reaper_min_version.get_string())

    def test_configured_reaper_floor_is_used(self):
        self._override('min_microversion', '2.70')
        for value in ('2.57', '2.65', '2.70'):
            self._override('reaper_min_microversion', value)
            app = cell0_filter.filter_factory({})(_nova)
            self.assertEqual(value,
                             app.rebuild.reaper_min_version.get_string())
            self.assertEqual('2.70', app.rebuild.min_version.get_string())

    def test_reaper_floor_above_the_threshold_stops_the_start(self):
        self._override('min_microversion', '2.65')
        self._override('reaper_min_microversion', '2.66')
        error = self.assertRaises(exception.InvalidConfiguration,
                                  cell0_filter.filter_factory, {})
        self.assertIn('reaper_min_microversion 2.66 is outside 2.57 .. '
                      '2.65, the effective min_microversion', str(error))

    def test_reaper_floor_above_the_default_threshold_stops_the_start(self):
        self._override('reaper_min_microversion', mv.ABOVE_NOVA_MAX)
        error = self.assertRaises(exception.InvalidConfiguration,
                                  cell0_filter.filter_factory, {})
        self.assertIn('reaper_min_microversion %s is outside 2.57 .. %s'
                      % (mv.ABOVE_NOVA_MAX, mv.NOVA_MAX), str(error))

    def test_reaper_floor_below_2_57_stops_the_start(self):
        for value in ('2.56', '2.1'):
            self._override('reaper_min_microversion', value)
            error = self.assertRaises(exception.InvalidConfiguration,
                                      cell0_filter.filter_factory, {})
            self.assertIn('reaper_min_microversion %s is outside 2.57 .. '
                          % value + mv.NOVA_MAX, str(error))
            self.assertIn('[cell0_rebuild]', str(error))

    def test_unknown_gate_stops_the_start(self):
        self._override('enabled_gates', ['state', 'lock', 'typo'])
        error = self.assertRaises(exception.GateLoadError,
                                  cell0_filter.filter_factory, {})
        message = str(error)
        self.assertIn('Invalid [cell0_rebuild] enabled_gates', message)
        self.assertIn('typo', message)
        self.assertIn('nova_cell0_rebuild.gates', message)

    def test_duplicate_gate_stops_the_start(self):
        self._override('enabled_gates', ['quota', 'quota'])
        error = self.assertRaises(exception.GateLoadError,
                                  cell0_filter.filter_factory, {})
        self.assertIn('listed more than once: quota', str(error))
