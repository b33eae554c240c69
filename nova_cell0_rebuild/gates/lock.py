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

"""Gate ``lock``: Nova's lock rules."""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.gates import base


class LockGate(base.Gate):
    """A locked server is rebuilt only by an admin, as in Nova."""

    def check(self, server, rebuild):
        # Nova's check_instance_lock: only an admin context overrides it.
        if server.instance.locked and not server.context.is_admin:
            self.refuse(409, _('Instance %s is locked') % server.uuid)
