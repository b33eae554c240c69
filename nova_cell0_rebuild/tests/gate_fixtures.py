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

"""Make stevedore find gates that no installed package declares."""

import importlib.metadata

import fixtures
from stevedore import extension

from nova_cell0_rebuild import gates


class ExtraGateEntryPoints(fixtures.Fixture):
    """Add entry points to the gates namespace, as if a package declared them.

    Only the entry point list changes: stevedore still loads, orders and
    reports missing or broken gates itself, so ``load_gates`` is tested as
    an operator's installed gate would meet it. Other namespaces are left
    alone.

    :param targets: entry point name to ``module:attribute``, e.g.
        ``project_allowlist='my_gates.allowlist:ProjectAllowListGate'``.
    """

    def __init__(self, **targets):
        super().__init__()
        self.entry_points = [
            importlib.metadata.EntryPoint(name=name, value=value,
                                          group=gates.NAMESPACE)
            for name, value in sorted(targets.items())]

    def _setUp(self):
        extra = self.entry_points
        original = extension.ExtensionManager.list_entry_points

        def list_entry_points(manager):
            found = original(manager)
            if manager.namespace == gates.NAMESPACE:
                return list(found) + extra
            return found

        # Every stevedore manager lists its entry points through this
        # method; stevedore's own classes are not replaced (before 5.4 they
        # name themselves in super() calls).
        self.useFixture(fixtures.MockPatchObject(
            extension.ExtensionManager, 'list_entry_points',
            list_entry_points))
