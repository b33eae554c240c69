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

"""Which microversions the rebuild-from-cell0 flow may start at."""

from nova.api.openstack import api_version_request

from nova_cell0_rebuild.api import microversion_settings as settings
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.tests import microversions as mv
from nova_cell0_rebuild.tests.unit import base


class TestCheckMinMicroversion(base.TestCase):

    def test_unset_is_novas_maximum(self):
        self.assertEqual(mv.NOVA_MAX,
                         settings.check_min_microversion(None).get_string())

    def test_accepted_from_2_57_to_novas_maximum(self):
        for value in ('2.57', '2.65', mv.NOVA_MAX):
            version = settings.check_min_microversion(value)
            self.assertEqual(value, version.get_string())
            self.assertEqual(api_version_request.APIVersionRequest(value),
                             version)

    def test_out_of_range_is_refused_with_the_range(self):
        for value in ('2.56', mv.ABOVE_NOVA_MAX, '3.0', '2.0'):
            error = self.assertRaises(exception.InvalidConfiguration,
                                      settings.check_min_microversion, value)
            message = str(error)
            self.assertIn('[cell0_rebuild]', message)
            self.assertIn('min_microversion %s is outside 2.57 .. %s'
                          % (value, mv.NOVA_MAX), message)
            self.assertIn('maximum of the installed Nova', message)

    def test_not_a_version_is_refused(self):
        for value in ('x', '2', '2.1.1', '', '2.065', 'latest', '3.0 '):
            error = self.assertRaises(exception.InvalidConfiguration,
                                      settings.check_min_microversion, value)
            self.assertEqual(
                'Invalid [cell0_rebuild] configuration: min_microversion %r '
                'is not a microversion: give 2.N, from 2.57 to %s, the '
                'maximum of the installed Nova' % (value, mv.NOVA_MAX),
                str(error))

    def test_reaper_floor_not_a_version_is_refused(self):
        error = self.assertRaises(
            exception.InvalidConfiguration,
            settings.check_reaper_min_microversion, '2.6x',
            settings.check_min_microversion('2.65'))
        self.assertEqual(
            "Invalid [cell0_rebuild] configuration: reaper_min_microversion "
            "'2.6x' is not a microversion: give 2.N, from 2.57 to 2.65, the "
            "effective min_microversion", str(error))
