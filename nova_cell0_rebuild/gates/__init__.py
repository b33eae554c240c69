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

"""Eligibility gates of a rebuild from cell0, loaded with stevedore.

``[cell0_rebuild] enabled_gates`` names, in order, the entry points of the
``nova_cell0_rebuild.gates`` namespace to run. Only enabled gates are loaded,
and a missing or broken enabled gate stops the filter from loading.
"""

from oslo_log import log as logging
from stevedore import named

from nova_cell0_rebuild import exception
from nova_cell0_rebuild.gates import base

LOG = logging.getLogger(__name__)

NAMESPACE = 'nova_cell0_rebuild.gates'


def _on_missing(names):
    raise exception.GateLoadError(reason=(
        'no entry point named %s in the %s namespace: install the package '
        'that provides it, or leave the name out'
        % (', '.join(sorted(names)), NAMESPACE)))


def _on_load_failure(manager, entrypoint, exc):
    raise exception.GateLoadError(reason='gate %s could not be loaded: %s'
                                  % (entrypoint.name, exc))


class GateChain(object):
    """The enabled gates, run in order; the first refusal wins."""

    def __init__(self, gates):
        self.gates = list(gates)

    @property
    def names(self):
        return [gate.name for gate in self.gates]

    def check(self, server, rebuild):
        """Run every gate; raises GateRefused from the first that refuses."""
        for gate in self.gates:
            try:
                gate.check(server, rebuild)
            except exception.GateRefused as refusal:
                LOG.info('Rebuild of server %s from cell0 refused by gate '
                         '%s: %s', server.uuid, refusal.gate, refusal)
                raise

    def verdicts(self, server, rebuild):
        """Every gate's verdict: a list of (gate, None or GateRefused)."""
        results = []
        for gate in self.gates:
            try:
                gate.check(server, rebuild)
                results.append((gate.name, None))
            except exception.GateRefused as refusal:
                results.append((gate.name, refusal))
        return results


def load_gates(conf):
    """Load the gates named in ``[cell0_rebuild] enabled_gates``.

    :raises: GateLoadError naming what is missing or broken.
    """
    names = conf.cell0_rebuild.enabled_gates
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise exception.GateLoadError(
            reason='listed more than once: %s' % ', '.join(duplicates))
    if not names:
        return GateChain([])
    manager = named.NamedExtensionManager(
        NAMESPACE, names, invoke_on_load=True, invoke_args=(conf,),
        name_order=True, on_missing_entrypoints_callback=_on_missing,
        on_load_failure_callback=_on_load_failure)
    gates = []
    for extension in manager:
        if not isinstance(extension.obj, base.Gate):
            raise exception.GateLoadError(reason=(
                'gate %s is %r, not a nova_cell0_rebuild.gates.base.Gate'
                % (extension.name, extension.obj)))
        extension.obj.name = extension.name
        gates.append(extension.obj)
    return GateChain(gates)
