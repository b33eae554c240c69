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

"""The opt-in of a create (pending.rst, "Opt-in"): every branch."""

import fixtures
import nova.conf
from nova import context as nova_context
from nova import policy as nova_policy
from oslo_policy import policy as oslo_policy

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.policies import cell0_waits
from nova_cell0_rebuild.tests.unit import base

GROUP = 'cell0_rebuild_pending'


class Authorize(object):
    """Records its calls; refuses as nova_api.authorize does, if asked."""

    def __init__(self, refuse=None, fail=None):
        self.calls = []
        self.refuse = refuse
        self.fail = fail

    def __call__(self, context, rule, target):
        self.calls.append((context, rule, target))
        if self.fail is not None:
            raise self.fail
        if self.refuse:
            raise exception.RequestRefused(403, self.refuse)


def _server(value, key=wait_opt_in.METADATA_KEY):
    return {'name': 'vm', 'metadata': {key: value, 'other': 'x'}}


class TestAtCreate(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(enabled=True)
        # is_admin given: Nova's policy is not consulted for it here.
        self.context = nova_context.RequestContext(
            user_id='u1', project_id='p1', roles=['member', 'reader'],
            is_admin=False)
        self.authorize = Authorize()
        self.logged = self.useFixture(fixtures.FakeLogger(
            name='nova_cell0_rebuild.api.wait_opt_in'))

    def flags(self, **kwargs):
        for name, value in kwargs.items():
            self.conf.set_override(name, value, group=GROUP)

    def _at_create(self, server_body):
        return wait_opt_in.at_create(self.context, self.conf, server_body,
                                     self.authorize)

    def test_honoured(self):
        opt_in = self._at_create(_server('6h'))
        self.assertEqual(wait_opt_in.OptIn('6h', None), opt_in)
        self.assertTrue(opt_in.honoured)
        self.assertIsNone(opt_in.code)
        self.assertEqual(
            [(self.context, 'cell0_rebuild:cell0_servers:wait',
              {'project_id': 'p1', 'user_id': 'u1'})],
            self.authorize.calls)

    def test_honoured_instant(self):
        self.assertEqual(
            wait_opt_in.OptIn('2026-12-08T18:00:00Z', None),
            self._at_create(_server('2026-12-08T18:00:00Z')))

    def test_no_key_is_no_opt_in_and_checks_nothing(self):
        for body in ({'name': 'vm'}, {'metadata': {}},
                     {'metadata': {'cell0_rebuild:waits': '6h'}},
                     {'metadata': None}, {'metadata': ['x']},
                     {'metadata': 'cell0_rebuild:wait'},
                     None, [], 'server', 42):
            self.assertEqual(wait_opt_in.OptIn(None, None),
                             self._at_create(body), body)
        self.assertEqual([], self.authorize.calls)
        self.assertFalse(wait_opt_in.NONE.honoured)

    def test_no_key_even_while_disabled(self):
        self.flags(enabled=False)
        self.assertEqual(wait_opt_in.NONE, self._at_create({'name': 'vm'}))

    def test_disabled(self):
        self.flags(enabled=False)
        opt_in = self._at_create(_server('6h'))
        self.assertEqual('6h', opt_in.raw)
        self.assertEqual('disabled', opt_in.code)
        self.assertTrue(opt_in.refusal.startswith('disabled: '))
        self.assertFalse(opt_in.honoured)
        self.assertEqual([], self.authorize.calls)

    def test_project_not_enabled(self):
        self.flags(projects=['p2', 'p3'])
        opt_in = self._at_create(_server('6h'))
        self.assertEqual('6h', opt_in.raw)
        self.assertEqual('project_not_enabled', opt_in.code)
        self.assertIn('p1', opt_in.refusal)
        self.assertEqual([], self.authorize.calls)

    def test_project_in_the_list(self):
        self.flags(projects=['p2', 'p1'])
        self.assertTrue(self._at_create(_server('6h')).honoured)

    def test_malformed_quotes_the_value(self):
        opt_in = self._at_create(_server('soon'))
        self.assertEqual('soon', opt_in.raw)
        self.assertEqual('malformed', opt_in.code)
        self.assertIn("'soon'", opt_in.refusal)
        self.assertEqual([], self.authorize.calls)
        self.assertIn("'soon'", self.logged.output)

    def test_malformed_value_that_is_not_a_string(self):
        for value in (6, None, ['6h'], {'d': '6h'}):
            opt_in = self._at_create(_server(value))
            self.assertIsNone(opt_in.raw, value)
            self.assertEqual('malformed', opt_in.code, value)

    def test_a_long_value_fits_the_record(self):
        # Nova answers 400 itself; the record, written first, must not
        # fail on a value longer than its column.
        opt_in = self._at_create(_server('x' * 10000))
        self.assertEqual('x' * wait_opt_in.RAW_LIMIT, opt_in.raw)
        self.assertEqual('malformed', opt_in.code)
        self.assertLessEqual(len(opt_in.refusal), wait_opt_in.REFUSAL_LIMIT)

    def test_policy_refused(self):
        self.authorize.refuse = 'Policy does not allow it.'
        opt_in = self._at_create(_server('6h'))
        self.assertEqual(
            wait_opt_in.OptIn('6h', 'policy: Policy does not allow it.'),
            opt_in)
        self.assertEqual('policy', opt_in.code)

    def test_unexpected_error_is_recorded_never_raised(self):
        self.authorize.fail = RuntimeError('mysql://secret@db down')
        opt_in = self._at_create(_server('6h'))
        self.assertEqual('6h', opt_in.raw)
        self.assertEqual('error', opt_in.code)
        self.assertIn('RuntimeError', opt_in.refusal)
        # The exception's text may hold internals: logged, not recorded.
        self.assertNotIn('secret', opt_in.refusal)
        self.assertIn('mysql://secret@db down', self.logged.output)

    def test_unregistered_options_are_an_error_not_a_raise(self):
        from oslo_config import cfg
        opt_in = wait_opt_in.at_create(self.context, cfg.ConfigOpts(),
                                       _server('6h'), self.authorize)
        self.assertEqual(wait_opt_in.OptIn('6h', opt_in.refusal), opt_in)
        self.assertEqual('error', opt_in.code)

    def test_a_broken_body_is_an_error_not_a_raise(self):
        class Metadata(dict):
            def __contains__(self, key):
                raise KeyError(key)

        opt_in = self._at_create({'metadata': Metadata()})
        self.assertEqual(wait_opt_in.OptIn(None, opt_in.refusal), opt_in)
        self.assertEqual('error', opt_in.code)

    def test_the_order_of_the_checks(self):
        # Disabled wins over the project, the project over the value, the
        # value over the policy: the cheapest, most general reason first.
        self.authorize.refuse = 'no'
        self.flags(projects=['p2'])
        self.assertEqual('project_not_enabled',
                         self._at_create(_server('soon')).code)
        self.flags(enabled=False)
        self.assertEqual('disabled', self._at_create(_server('soon')).code)
        self.flags(enabled=True, projects=['*'])
        self.assertEqual('malformed', self._at_create(_server('soon')).code)
        self.assertEqual('policy', self._at_create(_server('6h')).code)


class TestProjectEnabled(base.TestCase):

    def _enabled(self, projects, project_id):
        self.conf.set_override('projects', projects, group=GROUP)
        return wait_opt_in.project_enabled(self.conf, project_id)

    def test_all_projects_by_default(self):
        self.assertTrue(wait_opt_in.project_enabled(self.conf, 'p1'))

    def test_listed(self):
        self.assertTrue(self._enabled(['p1', 'p2'], 'p2'))
        self.assertFalse(self._enabled(['p1', 'p2'], 'p3'))
        self.assertFalse(self._enabled([], 'p1'))
        self.assertTrue(self._enabled(['p1', '*'], 'p3'))

    def test_no_project_never_waits(self):
        self.assertFalse(self._enabled(['*'], None))
        self.assertFalse(self._enabled(['*'], ''))

    def test_independent_of_enabled(self):
        # The API and the service answer "disabled" with its own code.
        self.conf.set_override('enabled', False, group=GROUP)
        self.assertTrue(self._enabled(['p1'], 'p1'))


class TestRefusalCode(base.TestCase):

    def test_codes(self):
        self.assertIsNone(wait_opt_in.refusal_code(None))
        self.assertIsNone(wait_opt_in.refusal_code(''))
        for code in ('disabled', 'project_not_enabled', 'malformed',
                     'policy', 'error'):
            self.assertEqual(code,
                             wait_opt_in.refusal_code(code + ': why: x'))
        self.assertEqual('error', wait_opt_in.refusal_code('garbage'))


class TestWithNovasPolicy(base.TestCase):
    """The rule checked through Nova's enforcer, as the filter will."""

    def setUp(self):
        super().setUp()
        nova.conf.CONF([], project='nova')
        self.addCleanup(nova_policy.reset)
        nova_policy.reset()
        self.conf.set_override('enabled', True, group=GROUP)

    def _at_create(self, roles, project_id='p1'):
        context = nova_context.RequestContext(
            user_id='u1', project_id=project_id, roles=roles)
        return wait_opt_in.at_create(context, self.conf, _server('2d'),
                                     nova_api.authorize)

    def test_member_is_honoured(self):
        self.assertEqual(wait_opt_in.OptIn('2d', None),
                         self._at_create(['member', 'reader']))

    def test_reader_is_refused_by_policy(self):
        opt_in = self._at_create(['reader'])
        self.assertEqual('policy', opt_in.code)
        self.assertIn(cell0_waits.WAIT, opt_in.refusal)

    def test_operator_override_is_honoured(self):
        # As an operator's policy file: ours registered, then overridden.
        nova_api._enforcer()
        nova_policy.set_rules(
            oslo_policy.Rules.from_dict({cell0_waits.WAIT: '!'}),
            overwrite=False)
        self.assertEqual('policy',
                         self._at_create(['member', 'reader']).code)
