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

"""Gate ``personality``: personality files cannot be re-applied."""

from oslo_log import log as logging

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.gates import base
from nova_cell0_rebuild import system_metadata

LOG = logging.getLogger(__name__)

MESSAGE = _(
    'Instance %s was created with personality files, which Nova does not '
    'keep and a rebuild at this microversion cannot supply again: this '
    'instance was created in a way that cannot support this request. '
    'Delete it and create it again.')


class PersonalityGate(base.Gate):
    """Refuse a server created with personality files (before 2.57).

    Known from the create record or from the system_metadata marker; the
    record alone is enough. The marker is written onto the cell0 instance
    when only the record knew: this refusal is the one place that writes
    it (nothing runs after a create to write it at burial), once per
    server, and never from a read-only view.
    """

    def check(self, server, rebuild):
        marked = server.instance.system_metadata.get(
            system_metadata.CREATED_WITH_PERSONALITY_FILES) == (
                system_metadata.TRUE)
        recorded = (server.record is not None and
                    server.record.created_with_personality_files)
        if not (marked or recorded):
            return
        if not marked and not server.read_only:
            try:
                nova_servers.set_cell_system_metadata(
                    server.context.elevated(), server.cell0, server.uuid,
                    system_metadata.CREATED_WITH_PERSONALITY_FILES,
                    system_metadata.TRUE)
            except Exception:
                # The refusal matters, the marker is a convenience.
                LOG.exception('Could not mark instance %s as created with '
                              'personality files', server.uuid)
        self.refuse(409, MESSAGE % server.uuid)
