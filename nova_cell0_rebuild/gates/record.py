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

"""Gate ``record``: the create was recorded by the filter."""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.gates import base


class RecordGate(base.Gate):
    """Without a create record, what the create asked for is unknown.

    Servers created before the filter was enabled have none. An operator
    who checked them can allow them with ``allow_unrecorded``.
    """

    def check(self, server, rebuild):
        if server.record is None and not (
                self.conf.cell0_rebuild.allow_unrecorded):
            self.refuse(409, _(
                'Instance %s was created before nova-cell0-rebuild recorded '
                'server creates, so the networks and files it was created '
                'with are unknown; it cannot be rebuilt from cell0. Delete '
                'it and create it again.') % server.uuid)
