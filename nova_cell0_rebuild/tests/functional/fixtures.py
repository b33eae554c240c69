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

"""The public test fixture's old path: see :mod:`nova_cell0_rebuild.fixture`.

Downstream functional tests written before the fixture became public import
it from here; the names are the public module's own objects. Patch
:mod:`nova_cell0_rebuild.fixture`, not this module, to change what the
fixture uses.
"""

from nova_cell0_rebuild.fixture import (
    Cell0RebuildFixture, find_paste_config, PASTE_FILE,
    write_paste_config_without_filter)

__all__ = ['Cell0RebuildFixture', 'find_paste_config', 'PASTE_FILE',
           'write_paste_config_without_filter']
