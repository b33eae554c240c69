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

"""load_gates and GateChain: which gates run, in which order."""

import importlib.metadata
from unittest import mock

import fixtures
from stevedore import extension
from stevedore import named

from nova_cell0_rebuild.conf import cell0_rebuild as conf_group
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates
from nova_cell0_rebuild.gates import base
from nova_cell0_rebuild.gates import fault
from nova_cell0_rebuild.gates import lock
from nova_cell0_rebuild.gates import personality
from nova_cell0_rebuild.gates import quota
from nova_cell0_rebuild.gates import record
from nova_cell0_rebuild.gates import state
from nova_cell0_rebuild.tests import gate_fixtures
from nova_cell0_rebuild.tests.unit import base as test_base

THIS_MODULE = __name__


class PassingGate(base.Gate):
    """Lets every rebuild through, noting that it was asked."""

    def __init__(self, conf, calls=None):
        super().__init__(conf)
        self.calls = calls if calls is not None else []

    def check(self, server, rebuild):
        self.calls.append(self.name)


class RefusingGate(PassingGate):
    """Refuses every rebuild, after noting that it was asked."""

    def check(self, server, rebuild):
        super().check(server, rebuild)
        self.refuse(403, 'refused by %s' % self.name)


class GateThatCannotStart(base.Gate):

    def __init__(self, conf):
        raise RuntimeError('needs [my_gate] endpoint')

    def check(self, server, rebuild):
        pass


class FakeServer(object):
    uuid = 'c9a2b6f4-3e1d-4a8b-9c7d-1e2f3a4b5c6d'


class LoaderTestCase(test_base.TestCase):

    def enable(self, *names):
        self.conf.set_override('enabled_gates', list(names),
                               group='cell0_rebuild')

    def install(self, **targets):
        """Gates of this module, declared as if a package were installed."""
        self.useFixture(gate_fixtures.ExtraGateEntryPoints(**{
            name: '%s:%s' % (THIS_MODULE, attr)
            for name, attr in targets.items()}))


class TestLoadGates(LoaderTestCase):

    def test_default_is_the_six_built_in_gates_in_order(self):
        chain = gates.load_gates(self.conf)
        self.assertEqual(list(conf_group.GATE_NAMES), chain.names)
        self.assertEqual(
            ['state', 'lock', 'fault', 'record', 'personality', 'quota'],
            chain.names)
        self.assertEqual(
            [state.StateGate, lock.LockGate, fault.FaultGate,
             record.RecordGate, personality.PersonalityGate,
             quota.QuotaGate],
            [type(gate) for gate in chain.gates])
        for gate in chain.gates:
            self.assertIs(self.conf, gate.conf)

    def test_configured_order_is_kept(self):
        # Entry points are found in another order (alphabetical).
        self.enable('quota', 'state', 'lock')
        self.assertEqual(['quota', 'state', 'lock'],
                         gates.load_gates(self.conf).names)

    def test_unknown_gate_is_named_with_the_namespace(self):
        self.enable('state', 'no_such_gate')
        error = self.assertRaises(exception.GateLoadError,
                                  gates.load_gates, self.conf)
        message = str(error)
        self.assertIn('enabled_gates', message)
        self.assertIn('no_such_gate', message)
        self.assertIn(gates.NAMESPACE, message)
        self.assertIsInstance(error, exception.InvalidConfiguration)

    def test_every_unknown_gate_is_named(self):
        self.enable('typo_one', 'state', 'typo_two')
        message = str(self.assertRaises(exception.GateLoadError,
                                        gates.load_gates, self.conf))
        self.assertIn('typo_one', message)
        self.assertIn('typo_two', message)

    def test_duplicate_gate_is_refused(self):
        self.enable('state', 'lock', 'state')
        message = str(self.assertRaises(exception.GateLoadError,
                                        gates.load_gates, self.conf))
        self.assertIn('state', message)
        self.assertNotIn('lock', message)
        self.assertIn('more than once', message)

    def test_no_gates_gives_an_empty_chain(self):
        self.enable()
        manager = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.gates.named.NamedExtensionManager')).mock
        chain = gates.load_gates(self.conf)
        self.assertEqual([], chain.names)
        self.assertIsNone(chain.check(FakeServer(), {}))
        manager.assert_not_called()

    def test_operators_gate_runs_where_it_is_listed(self):
        self.install(mine='PassingGate')
        self.enable('state', 'mine', 'quota')
        chain = gates.load_gates(self.conf)
        self.assertEqual(['state', 'mine', 'quota'], chain.names)
        mine = chain.gates[1]
        self.assertIsInstance(mine, PassingGate)
        self.assertEqual('mine', mine.name)
        self.assertIs(self.conf, mine.conf)

    def test_operators_gate_that_cannot_be_imported(self):
        self.useFixture(gate_fixtures.ExtraGateEntryPoints(
            mine='nova_cell0_rebuild.tests.no_such_module:Gate'))
        self.enable('state', 'mine')
        message = str(self.assertRaises(exception.GateLoadError,
                                        gates.load_gates, self.conf))
        self.assertIn('gate mine could not be loaded', message)
        self.assertIn('no_such_module', message)

    def test_operators_gate_that_cannot_start(self):
        self.install(mine='GateThatCannotStart')
        self.enable('mine')
        message = str(self.assertRaises(exception.GateLoadError,
                                        gates.load_gates, self.conf))
        self.assertIn('gate mine could not be loaded', message)
        self.assertIn('needs [my_gate] endpoint', message)

    def test_broken_gate_that_is_not_enabled_is_not_loaded(self):
        self.install(mine='GateThatCannotStart')
        self.useFixture(gate_fixtures.ExtraGateEntryPoints(
            gone='nova_cell0_rebuild.tests.no_such_module:Gate'))
        self.assertEqual(list(conf_group.GATE_NAMES),
                         gates.load_gates(self.conf).names)

    def test_chain_is_built_from_the_managers_extensions(self):
        calls = []
        extensions = [
            extension.Extension(
                name, importlib.metadata.EntryPoint(
                    name=name, value='%s:%s' % (THIS_MODULE, cls.__name__),
                    group=gates.NAMESPACE),
                cls, cls(self.conf, calls))
            for name, cls in (('first', PassingGate),
                              ('second', RefusingGate))]
        manager = named.NamedExtensionManager.make_test_instance(
            extensions, namespace=gates.NAMESPACE)
        factory = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.gates.named.NamedExtensionManager',
            return_value=manager)).mock
        self.enable('first', 'second')

        chain = gates.load_gates(self.conf)

        factory.assert_called_once_with(
            gates.NAMESPACE, ['first', 'second'], invoke_on_load=True,
            invoke_args=(self.conf,), name_order=True,
            on_missing_entrypoints_callback=mock.ANY,
            on_load_failure_callback=mock.ANY)
        self.assertEqual(['first', 'second'], chain.names)
        refusal = self.assertRaises(exception.GateRefused, chain.check,
                                    FakeServer(), {})
        self.assertEqual('second', refusal.gate)
        self.assertEqual('refused by second', str(refusal))
        self.assertEqual(['first', 'second'], calls)


class TestGateChain(test_base.TestCase):

    def _gate(self, cls, name, calls):
        gate = cls(self.conf, calls)
        gate.name = name
        return gate

    def test_every_gate_runs_in_order_when_none_refuses(self):
        calls = []
        chain = gates.GateChain([self._gate(PassingGate, name, calls)
                                 for name in ('a', 'b', 'c')])
        self.assertIsNone(chain.check(FakeServer(), {}))
        self.assertEqual(['a', 'b', 'c'], calls)
        self.assertEqual(['a', 'b', 'c'], chain.names)

    def test_first_refusal_stops_the_chain(self):
        calls = []
        chain = gates.GateChain([
            self._gate(PassingGate, 'a', calls),
            self._gate(RefusingGate, 'b', calls),
            self._gate(RefusingGate, 'c', calls),
            self._gate(PassingGate, 'd', calls)])
        refusal = self.assertRaises(exception.GateRefused, chain.check,
                                    FakeServer(), {})
        self.assertEqual('b', refusal.gate)
        self.assertEqual(403, refusal.status)
        self.assertEqual('refused by b', str(refusal))
        self.assertEqual(['a', 'b'], calls)

    def test_gate_errors_are_not_taken_for_refusals(self):
        calls = []
        broken = self._gate(PassingGate, 'broken', calls)
        broken.check = mock.Mock(side_effect=ValueError('bug in gate'))
        chain = gates.GateChain([broken,
                                 self._gate(PassingGate, 'after', calls)])
        self.assertRaises(ValueError, chain.check, FakeServer(), {})
        self.assertEqual([], calls)
