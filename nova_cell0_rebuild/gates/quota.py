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

"""Gate ``quota``: the project may hold this server now."""

from nova_cell0_rebuild.adapters import nova_quota
from nova_cell0_rebuild.gates import base


class QuotaGate(base.Gate):
    """403 like Nova's create when the project is over its quota now.

    The buried server already counts against the project's quota where
    Nova counts it (legacy counting includes cell0); only what it does not
    count yet is added, so a project exactly at its limit passes.
    """

    def check(self, server, rebuild):
        refusal = nova_quota.quota_refusal(server.context, server.instance)
        if refusal:
            self.refuse(403, refusal)
