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

"""Gate ``state``: only a server that never left its failed create."""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.gates import base


class StateGate(base.Gate):
    """vm_state error, never launched, no task running, not being deleted."""

    def check(self, server, rebuild):
        instance = server.instance
        reason = None
        if instance.deleted or server.mapping.queued_for_delete:
            reason = _('it is being deleted')
        elif instance.vm_state != nova_compute.VM_STATE_ERROR:
            reason = _('its vm_state is %s, not error') % instance.vm_state
        elif instance.launched_at is not None:
            reason = _('it was launched once')
        elif instance.task_state is not None:
            reason = _('task %s is in progress') % instance.task_state
        if reason:
            self.refuse(409, _(
                "Instance %(uuid)s is in an invalid state for 'rebuild' "
                "from cell0: %(reason)s.") % {'uuid': instance.uuid,
                                              'reason': reason})
