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

"""Every write Nova can accept while a server moves out of cell0 (issue 25, 2).

Each of Nova's mutating calls that can answer 2xx for a server buried in
cell0 (vm_state ERROR, no host) is made while a rebuild holds the server,
in each window of the move (doc/source/admin/concurrent-edits.rst):

- ``read``: the move has read and copied the server, not yet claimed it;
- ``claimed``: its cell0 row carries the move's task state;
- ``build_request_written``: a BuildRequest, mapped to no cell; the cell0
  rows still there, invisible to Nova's API;
- ``build_request``: its BuildRequest only, just before the cast.

After the cast the server is the conductor's, as after Nova's own create,
except that the filter goes on refusing what it refuses in the build
request windows until the conductor built the server in a cell
(tests/interleavings covers that window, where the conductor runs).

Whatever the interleaving, a write Nova answered 2xx is on the final
server (rebuilt in cell1, or still in cell0 when the rebuild was
refused), and a refused write is a Nova-style 4xx JSON fault that changed
nothing. Never a dropped write, never a 5xx.


"""

import eventlet
from eventlet import event
from nova import context as nova_context
from nova import objects as nova_objects
from nova.tests.functional.api import client as api_client
from oslo_serialization import jsonutils
import testscenarios

from nova_cell0_rebuild import objects

from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults

load_tests = testscenarios.load_tests_apply_scenarios

#: Each window and the adapter function (module.function) the move calls
#: first in it.
WINDOWS = [
    ('read', dict(window='nova_cell0_rows.claim', window_name='read')),
    ('claimed', dict(window='nova_build_requests.new_build_request',
                     window_name='claimed')),
    ('build_request_written', dict(
        window='nova_cell0_rows.destroy_cell0_instance',
        window_name='build_request_written')),
    ('build_request', dict(window='nova_request_specs.complete_request_spec',
                           window_name='build_request')),
]

JSON = {'Content-Type': 'application/json'}
LOCK_REASON = 'disk check by the operator'


class _HeldOnce(object):
    """Stops the move the first time it reaches a point (not its retries)."""

    def __init__(self):
        self.reached = event.Event()
        self.release = event.Event()
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls == 1:
            self.reached.send()
            self.release.wait()


class _Edit(object):
    """One of Nova's writes; subclasses say how it is made and seen."""

    def prepare(self, test, server_id):
        """Bring the server to where the write means something."""

    def make(self, test, server_id):
        """Make the write; returns Nova's raw answer."""
        raise NotImplementedError()

    def landed(self, test, server_id):
        """Assert that the write is on the server as it ends."""
        raise NotImplementedError()

    def observe(self, test, server_id):
        """What the write changes, as Nova shows it.

        Compared before and after a refused write: nothing changed.
        """
        return test.admin_api.get_server(server_id)

    def visible(self, test, server_id):
        """What the write changes on the server, its history aside."""
        return self.observe(test, server_id)


class Update(_Edit):
    """PUT /servers/{id}: name, description, hostname (2.90)."""

    body = {'name': 'renamed', 'description': 'new description',
            'hostname': 'renamed-host'}

    def make(self, test, server_id):
        return test.api.api_put('/servers/%s' % server_id,
                                {'server': dict(self.body)},
                                check_response_status=False)

    def landed(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        test.assertEqual(
            ('renamed', 'new description', 'renamed-host'),
            (server['name'], server['description'],
             server['OS-EXT-SRV-ATTR:hostname']))

    def observe(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        return (server['name'], server['description'],
                server['OS-EXT-SRV-ATTR:hostname'])


class LockWithReason(_Edit):
    """An admin's lock with its reason (2.73): locked_reason is in
    system_metadata, and the lock is an instance action.
    """

    def make(self, test, server_id):
        return test.admin_api.api_post(
            '/servers/%s/action' % server_id,
            {'lock': {'locked_reason': LOCK_REASON}},
            check_response_status=False)

    def landed(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        test.assertEqual((True, LOCK_REASON),
                         (server['locked'], server['locked_reason']))
        test.assertIn('lock', test._actions(server_id))

    def observe(self, test, server_id):
        return self.visible(test, server_id) + (test._actions(server_id),)

    def visible(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        return (server['locked'], server['locked_reason'])


class NewLockReason(LockWithReason):
    """An admin of another project locks again a server it locked, with
    another reason: only system_metadata and the actions change, no column
    of the instance. (Nova ignores a lock by the owner's project of a
    locked server.)
    """

    def _admin(self, test):
        return test._client('admin', 'other-project', ['admin'])

    def prepare(self, test, server_id):
        self._admin(test).api_post(
            '/servers/%s/action' % server_id,
            {'lock': {'locked_reason': 'first reason'}})

    def make(self, test, server_id):
        return self._admin(test).api_post(
            '/servers/%s/action' % server_id,
            {'lock': {'locked_reason': LOCK_REASON}},
            check_response_status=False)


class Unlock(_Edit):
    """Unlock of a server an admin locked with a reason."""

    def prepare(self, test, server_id):
        test.admin_api.api_post('/servers/%s/action' % server_id,
                                {'lock': {'locked_reason': LOCK_REASON}})

    def make(self, test, server_id):
        return test.admin_api.api_post('/servers/%s/action' % server_id,
                                       {'unlock': None},
                                       check_response_status=False)

    def landed(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        test.assertEqual((False, None),
                         (server['locked'], server['locked_reason']))
        test.assertIn('unlock', test._actions(server_id))

    def observe(self, test, server_id):
        return self.visible(test, server_id) + (test._actions(server_id),)

    def visible(self, test, server_id):
        server = test.admin_api.get_server(server_id)
        return (server['locked'], server['locked_reason'])


class ResetState(_Edit):
    """os-resetState to error: on a server in ERROR its write is the
    instance action (and clearing whatever task state it has).
    """

    def make(self, test, server_id):
        return test.admin_api.api_post(
            '/servers/%s/action' % server_id,
            {'os-resetState': {'state': 'error'}},
            check_response_status=False)

    def landed(self, test, server_id):
        test.assertIn('resetState', test._actions(server_id))

    def observe(self, test, server_id):
        return test._actions(server_id)

    def visible(self, test, server_id):
        return ()  # on a server in ERROR, only the action shows it


class ClearPassword(_Edit):
    """DELETE os-server-password: password_0..3 in system_metadata."""

    def prepare(self, test, server_id):
        # As the metadata service stores what the guest posted.
        cell0 = test._cell0()
        with nova_context.target_cell(test.admin_context, cell0) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['system_metadata'])
            instance.system_metadata['password_0'] = 'encrypted'
            instance.save()

    def make(self, test, server_id):
        return test.api.api_delete('/servers/%s/os-server-password' %
                                   server_id, check_response_status=False)

    def landed(self, test, server_id):
        test.assertEqual('', self.observe(test, server_id))

    def observe(self, test, server_id):
        return test.api.api_get('/servers/%s/os-server-password' %
                                server_id).body['password']


class UnpinAvailabilityZone(_Edit):
    """PUT /servers/{id} pinned_availability_zone null (2.104): written to
    the RequestSpec, which the move also writes.
    """

    def prepare(self, test, server_id):
        # As a create with an availability zone stores it (the create
        # itself is refused while no compute is enabled in the zone).
        spec = nova_objects.RequestSpec.get_by_instance_uuid(
            test.admin_context, server_id)
        spec.availability_zone = 'nova'
        spec.save()

    def make(self, test, server_id):
        return test.api.api_put(
            '/servers/%s' % server_id,
            {'server': {'pinned_availability_zone': None}},
            check_response_status=False)

    def landed(self, test, server_id):
        test.assertIsNone(self.observe(test, server_id))

    def observe(self, test, server_id):
        return nova_objects.RequestSpec.get_by_instance_uuid(
            test.admin_context, server_id).availability_zone


EDITS = [
    ('update', dict(edit=Update(), edit_name='update')),
    ('lock_with_reason', dict(edit=LockWithReason(),
                              edit_name='lock_with_reason')),
    ('new_lock_reason', dict(edit=NewLockReason(),
                             edit_name='new_lock_reason')),
    ('unlock', dict(edit=Unlock(), edit_name='unlock')),
    ('reset_state', dict(edit=ResetState(), edit_name='reset_state')),
    ('clear_password', dict(edit=ClearPassword(), edit_name='clear_password')),
    ('unpin_availability_zone', dict(edit=UnpinAvailabilityZone(),
                                     edit_name='unpin_availability_zone')),
]

#: Nova's calls that refuse a server in ERROR without a host, or one
#: being built: (name, client, method, url, body, microversion).
REFUSED = [
    ('metadata: replace', 'api', 'PUT', 'metadata', {'metadata': {'a': 'b'}},
     None),
    ('metadata: update', 'api', 'POST', 'metadata', {'metadata': {'a': 'b'}},
     None),
    ('metadata: set one', 'api', 'PUT', 'metadata/k', {'meta': {'k': 'x'}},
     None),
    ('metadata: delete one', 'api', 'DELETE', 'metadata/k', None, None),
    ('tags: replace', 'api', 'PUT', 'tags', {'tags': ['x']}, None),
    ('tags: delete all', 'api', 'DELETE', 'tags', None, None),
    ('tags: add one', 'api', 'PUT', 'tags/x', None, None),
    ('tags: delete one', 'api', 'DELETE', 'tags/t1', None, None),
    ('createImage', 'api', 'POST', 'action',
     {'createImage': {'name': 'snap'}}, None),
    ('createBackup', 'admin_api', 'POST', 'action',
     {'createBackup': {'name': 'b', 'backup_type': 'daily',
                       'rotation': 1}}, None),
    ('trigger_crash_dump', 'api', 'POST', 'action',
     {'trigger_crash_dump': None}, None),
    ('changePassword', 'api', 'POST', 'action',
     {'changePassword': {'adminPass': 'x'}}, None),
    ('os-stop', 'api', 'POST', 'action', {'os-stop': None}, None),
    ('reboot', 'api', 'POST', 'action', {'reboot': {'type': 'HARD'}}, None),
    ('shelve', 'api', 'POST', 'action', {'shelve': None}, None),
    ('attach interface', 'api', 'POST', 'os-interface',
     {'interfaceAttachment': {}}, None),
]


#: Nova's own 500 for any server without a host (its RPC cannot be
#: addressed): nothing is written, the move goes on. Left to Nova (see
#: doc/source/admin/concurrent-edits.rst). addSecurityGroup and
#: removeSecurityGroup write to Neutron's ports only, and a server in cell0
#: has none (Nova answers 404); Nova's Neutron fixture cannot answer them.
HOSTLESS_500 = [
    ('injectNetworkInfo', 'admin_api', 'POST', 'action',
     {'injectNetworkInfo': None}, None),
    ('addFixedIp', 'api', 'POST', 'action',
     {'addFixedIp': {'networkId': 'net'}}, '2.43'),
    ('removeFixedIp', 'api', 'POST', 'action',
     {'removeFixedIp': {'address': '10.0.0.4'}}, '2.43'),
]

#: Nova's own 500 (OrphanedObjectError) for these writes to a server that
#: is a BuildRequest, as during any create: nothing is written.
#: The windows in which the move holds the server as a BuildRequest.
BUILD_REQUEST_WINDOWS = ('build_request_written', 'build_request')
#: The filter refuses these (409) while the move holds a BuildRequest:
#: Nova would answer the actions 500, and its update 200 with a rename the
#: conductor may never see.
FILTER_409_ON_BUILD_REQUEST = ('update', 'unpin_availability_zone',
                               'lock_with_reason', 'new_lock_reason',
                               'unlock', 'reset_state')
#: Nova fails these with a 500 (OrphanedObjectError) on a BuildRequest.
NOVA_500_ON_BUILD_REQUEST = {
    'edits': ('clear_password',),
    'windows': BUILD_REQUEST_WINDOWS,
}


class _EditDuringMoveBase(test_move_faults.MoveChecks,
                          base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        self.api.microversion = self.admin_api.microversion = 'latest'

    def _actions(self, server_id):
        return [action['action'] for action in self.admin_api.api_get(
            '/servers/%s/os-instance-actions' % server_id
        ).body['instanceActions']]

    def _buried_with_room(self):
        self._set_capacity(False)
        server = self._buried()
        self._set_capacity(True)
        return server

    def _buried(self):
        return self._create_buried_server(
            name='victim', metadata={'k': 'v'}, tags=['t1'],
            description='d', hostname='victim-host')

    def _during_move(self, server_id, make):
        """Run a rebuild (by an admin, whom a lock does not stop), pause
        it in the scenario's window, make the write there, let it end.

        :returns: (the write's answer, the rebuild's answer).
        """
        hold = _HeldOnce()
        with self._inject(self.window, hold):
            move = eventlet.spawn(self._rebuild, server_id,
                                  api=self.admin_api)
            hold.reached.wait()
            try:
                answer = make()
            finally:
                hold.release.send()
                rebuilt = move.wait()
        return answer, rebuilt

    def _assert_ended_once(self, server, rebuilt):
        """The rebuild answered 202 (built in cell1) or a 4xx fault (the
        server is still in cell0); never a 5xx.
        """
        self.assertIn(rebuilt.status, (202, 409), rebuilt.body)
        if rebuilt.status == 202:
            self._wait_for_state_change(server, 'ACTIVE')
            self.assertEqual('cell1', self._assert_exists_once(server['id']))
            self.assertEqual({}, self._cell0_rows(server['id']))
        else:
            self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(0, self._journals_in_progress(server['id']))

    def _journals_in_progress(self, server_id):
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        if journal is None:
            return 0
        return int(journal.status == 'in_progress')

    @staticmethod
    def _is_refusal(answer):
        """Whether *answer* is a Nova-style 4xx fault."""
        if not (400 <= answer.status < 500 and isinstance(answer.body, dict)
                and len(answer.body) == 1):
            return False
        (fault,) = answer.body.values()
        return fault.get('code') == answer.status

    def _assert_refused(self, answer, what):
        """A Nova-style 4xx fault: JSON, one key naming the fault."""
        self.assertTrue(400 <= answer.status < 500,
                        (what, answer.status, answer.body))
        self.assertIsInstance(answer.body, dict, (what, answer.body))
        (fault,) = answer.body.values()
        self.assertEqual(answer.status, fault['code'], (what, answer.body))


class EditDuringMoveTest(testscenarios.WithScenarios, _EditDuringMoveBase):
    """Each write in each window lands on the final server, or is refused
    and changes nothing.
    """

    scenarios = testscenarios.multiply_scenarios(EDITS, WINDOWS)

    def test_write_lands_or_is_refused(self):
        server = self._buried_with_room()
        server_id = server['id']
        self.edit.prepare(self, server_id)
        before = self.edit.observe(self, server_id)
        before_visible = self.edit.visible(self, server_id)
        before_actions = self._actions(server_id)
        answer, rebuilt = self._during_move(
            server_id, lambda: self.edit.make(self, server_id))
        self._assert_ended_once(server, rebuilt)
        if 200 <= answer.status < 300:
            self.edit.landed(self, server_id)
        elif self._nova_500_on_build_request():
            self.assertEqual(500, answer.status, answer.body)
            self.assertIn('OrphanedObjectError', str(answer.body))
            # Nova recorded the action before it failed: only the action.
            self.assertEqual(before_visible,
                             self.edit.visible(self, server_id))
        else:
            self._assert_refused(answer, self.edit)
            if (self.window_name in BUILD_REQUEST_WINDOWS and
                    self.edit_name in FILTER_409_ON_BUILD_REQUEST):
                # The filter's answer while the move holds a BuildRequest
                # (Nova's own would be a 500 after recording the action):
                # nothing written, no action but the move's own.
                self.assertEqual(409, answer.status, answer.body)
                self.assertEqual(before_visible,
                                 self.edit.visible(self, server_id))
                self.assertEqual(['rebuild'] + before_actions,
                                 self._actions(server_id))
            else:
                self.assertEqual(before, self.edit.observe(self, server_id))

    def _nova_500_on_build_request(self):
        return (self.edit_name in NOVA_500_ON_BUILD_REQUEST['edits'] and
                self.window_name in NOVA_500_ON_BUILD_REQUEST['windows'])


class OtherProjectDuringMoveTest(_EditDuringMoveBase):
    """The filter's 409 is for those who may see the server: another
    project's update or lock of a moving server gets Nova's own answer.
    """

    def test_other_project_gets_novas_not_found(self):
        server = self._buried_with_room()
        server_id = server['id']
        other = api_client.TestOpenStackClient(
            'other', self.api.base_url.rsplit('/', 1)[0] + '/v2.1',
            project_id='other-project')
        other.microversion = 'latest'

        def make_both():
            return [
                other.api_put('/servers/%s' % server_id,
                              {'server': {'name': 'theirs'}},
                              check_response_status=False),
                other.api_post('/servers/%s/action' % server_id,
                               {'lock': None},
                               check_response_status=False)]
        # The build request written: our 409 for the owner (above). Nova
        # answers another project 404 for the cell0 row (its query is
        # project-scoped) and 403 for a build request (its policy).
        self.window = 'nova_cell0_rows.destroy_cell0_instance'
        answers, rebuilt = self._during_move(server_id, make_both)
        for answer in answers:
            self._assert_refused(answer, 'another project')
            self.assertIn(answer.status, (403, 404), answer.body)
        self._assert_ended_once(server, rebuilt)
        self.assertEqual('victim',
                         self.admin_api.get_server(server_id)['name'])


class RefusedDuringMoveTest(testscenarios.WithScenarios,
                            _EditDuringMoveBase):
    """Nova's other writes refuse a server in ERROR without a host (and
    one being built) with a 4xx fault, in every window of the move, and
    the move goes on as if they were never made.
    """

    scenarios = WINDOWS

    def test_refused_and_nothing_changed(self):
        server = self._buried_with_room()
        server_id = server['id']
        before = self._user_fields(server_id)

        def make_all():
            answers = []
            for name, client, method, path, body, version in (
                    REFUSED + HOSTLESS_500):
                api = getattr(self, client)
                kwargs = {'check_response_status': False}
                with _microversion(api, version):
                    if body is not None:
                        kwargs['body'] = jsonutils.dumps(body)
                    answers.append((name, api_client.APIResponse(
                        api.api_request(
                            '/servers/%s/%s' % (server_id, path),
                            method=method, headers=dict(JSON),
                            **kwargs))))
            return answers
        answers, rebuilt = self._during_move(server_id, make_all)
        self.assertEqual(202, rebuilt.status, rebuilt.body)
        self._assert_ended_once(server, rebuilt)
        hostless = {name for name, *_ in HOSTLESS_500}
        unexpected = [(name, response.status, response.body)
                      for name, response in answers
                      if not (self._is_refusal(response) or (
                          name in hostless and response.status == 500))]
        self.assertEqual([], unexpected)
        self.assertEqual(before, self._user_fields(server_id))


class _microversion(object):
    def __init__(self, api, version):
        self.api, self.version = api, version

    def __enter__(self):
        self.saved = self.api.microversion
        if self.version:
            self.api.microversion = self.version

    def __exit__(self, *exc):
        self.api.microversion = self.saved
