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

"""Gate ``fault``: the server was buried because scheduling failed."""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.gates import base


class FaultGate(base.Gate):
    """Only a server buried for lack of a valid host, or by an outage of
    the cloud's database or message bus while it was scheduled, is
    scheduled again.

    Any other burial reason (a host not mapped to a cell, a scheduler
    error, an over-quota recheck) says a new try would fail again or hide a
    problem an operator must look at. An outage (``DBConnectionError``,
    ``DBDeadlock``, ``MessagingTimeout``) says nothing of the server: a
    rebuild's own hand-off buried by a database failover would otherwise
    leave the server for ever unrebuildable.
    """

    def check(self, server, rebuild):
        fault = server.fault
        if fault is None:
            self.refuse(409, _(
                'Instance %s has no fault recorded, so it is unknown why '
                'its create failed; it cannot be rebuilt from cell0.')
                % server.uuid)
        if not (nova_compute.is_scheduling_failure(fault)
                or nova_compute.is_outage(fault)):
            self.refuse(409, _(
                'Instance %(uuid)s was not buried in cell0 for lack of a '
                'valid host but because: %(reason)s; it cannot be rebuilt '
                'from cell0.') % {'uuid': server.uuid,
                                  'reason': fault.message})
