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

"""An example of an operator's own eligibility gate, tested on real Nova.

The gate of ``doc/source/admin/gates.rst``, "Adding your own gate";
``test_custom_gate`` runs it in nova-api as an operator enables it.

A gate is a subclass of :class:`nova_cell0_rebuild.gates.base.Gate`: it is
constructed once, when nova-api loads the filter, with the ``ConfigOpts``
nova-api uses, and its ``check`` either returns or calls
``self.refuse(status, message)``, which answers the rebuild with a
Nova-style fault and changes nothing. Gates run in the order of
``[cell0_rebuild] enabled_gates`` and the first refusal wins, so a gate
listed after the built-in ones only sees servers they let through.

To ship a gate like this one, declare it in your own package's
``setup.cfg`` and install that package where nova-api runs::

    [entry_points]
    nova_cell0_rebuild.gates =
        project_allowlist = my_gates.allowlist:ProjectAllowListGate

then list it in ``nova.conf``, after the built-in gates (each of them
guards something) and restart nova-api::

    [cell0_rebuild]
    enabled_gates = state,lock,fault,record,personality,quota,project_allowlist

    [my_gates]
    rebuild_projects = 4f3c1c1e3c9e4d0f8f6a2b7d5e9c0a11

A misspelt name, or a gate that fails to import or to construct, stops
nova-api from loading the filter, with the reason in its log.
"""

from oslo_config import cfg

from nova_cell0_rebuild.gates import base

GROUP = 'my_gates'

OPTS = [
    cfg.ListOpt(
        'rebuild_projects',
        default=[],
        help="""
Project ids whose servers may be rebuilt from cell0. Other projects delete
and create their failed servers again.
"""),
]


class ProjectAllowListGate(base.Gate):
    """Only listed projects may rebuild their servers from cell0.

    For instance, only the projects that run pre-emptible workloads, whose
    reaper (such as CERN's Aardvark) rebuilds failed servers once it has
    freed capacity. Others are refused with 403, as Nova answers an action
    its policy forbids.
    """

    def __init__(self, conf):
        super().__init__(conf)
        # On the ConfigOpts given, not on a global one; registering the
        # same options again (another pipeline, a test) is a no-op.
        conf.register_opts(OPTS, group=GROUP)

    def check(self, server, rebuild):
        project_id = server.instance.project_id
        # Read on every request: a test (or a mutable option) may change it.
        if project_id not in self.conf[GROUP].rebuild_projects:
            self.refuse(403, (
                'Project %(project)s is not allowed to rebuild servers '
                'buried in cell0; delete server %(uuid)s and create it '
                'again.') % {'project': project_id, 'uuid': server.uuid})
