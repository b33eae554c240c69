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

"""The installed Nova's release and microversions, for the tests.

The tests run on every supported Nova release, whose maximum microversions
differ (2.96 on Nova 29 .. 2.104 on Nova 34): they take it from Nova itself,
not from the plugin under test.
"""

import importlib.metadata

from nova.api.openstack import api_version_request

_MAX = api_version_request.max_api_version()

#: The maximum microversion of the installed Nova, e.g. "2.104".
NOVA_MAX = _MAX.get_string()
#: Its minor number, e.g. 104.
NOVA_MAX_MINOR = _MAX.ver_minor
#: One past it: a microversion the installed Nova does not know.
ABOVE_NOVA_MAX = '2.%d' % (NOVA_MAX_MINOR + 1)
#: One below it.
BELOW_NOVA_MAX = '2.%d' % (NOVA_MAX_MINOR - 1)

#: The installed Nova's major release, e.g. 34.
NOVA_MAJOR = int(importlib.metadata.version('nova').split('.')[0])
