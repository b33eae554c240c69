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

"""Policy rules of nova-cell0-rebuild, declared as data."""

import itertools

from nova_cell0_rebuild.policies import cell0_servers
from nova_cell0_rebuild.policies import cell0_waits
from nova_cell0_rebuild.policies import rebuild


def list_rules():
    return itertools.chain(
        rebuild.list_rules(),
        cell0_servers.list_rules(),
        cell0_waits.list_rules(),
    )
