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

"""The six built-in gates, each shown real Nova objects."""

import datetime
from unittest import mock

import fixtures
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects as nova_objects
from oslo_utils import uuidutils

from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.gates import base
from nova_cell0_rebuild.gates import fault
from nova_cell0_rebuild.gates import lock
from nova_cell0_rebuild.gates import personality
from nova_cell0_rebuild.gates import quota
from nova_cell0_rebuild.gates import record
from nova_cell0_rebuild.gates import state
from nova_cell0_rebuild import objects
from nova_cell0_rebuild import system_metadata
from nova_cell0_rebuild.tests.unit import base as test_base

PROJECT = 'b0e2f1d4a3c5476d8e9f0a1b2c3d4e5f'
REBUILD = {'imageRef': '155d900f-4e14-4e4c-a73d-069cbf4541e6'}
NO_VALID_HOST = nova_exception.NoValidHost(
    reason='There are not enough hosts available.').format_message()


class GateTestCase(test_base.TestCase):
    """Builds a buried server as the filter shows it to the gates."""

    #: The gate class under test, and its entry point name.
    gate_class = None
    gate_name = None

    def setUp(self):
        super().setUp()
        nova_objects.register_all()
        self.context = nova_context.RequestContext('user', PROJECT,
                                                   is_admin=False)
        self.gate = self.gate_class(self.conf)
        # What load_gates does with the entry point name.
        self.gate.name = self.gate_name

    def _server(self, context=None, queued_for_delete=False,
                record=None, fault_message=NO_VALID_HOST, **fields):
        """A Cell0Server whose instance never left its failed create."""
        values = {'uuid': uuidutils.generate_uuid(),
                  'project_id': PROJECT, 'user_id': 'user',
                  'vm_state': 'error', 'task_state': None,
                  'launched_at': None, 'locked': False, 'deleted': False,
                  'system_metadata': {}}
        values.update(fields)
        instance = nova_objects.Instance(**values)
        instance.obj_reset_changes(recursive=True)
        mapping = nova_objects.InstanceMapping(
            instance_uuid=instance.uuid, project_id=PROJECT,
            queued_for_delete=queued_for_delete)
        cell0 = nova_objects.CellMapping(
            uuid=nova_objects.CellMapping.CELL0_UUID, name='cell0')
        instance_fault = None
        if fault_message is not None:
            instance_fault = nova_objects.InstanceFault(
                instance_uuid=instance.uuid, code=500,
                message=fault_message)
        return base.Cell0Server(
            context=context or self.context, instance=instance,
            mapping=mapping, cell0=cell0, record=record,
            fault=instance_fault, create_request_id='req-create')

    def assertAllowed(self, server):
        self.assertIsNone(self.gate.check(server, REBUILD))
        self.assertEqual(set(), server.instance.obj_what_changed())

    def assertRefused(self, server, status, *reasons):
        """The gate refuses with *status*, naming the server and reasons.

        :returns: the refusal's message.
        """
        refusal = self.assertRaises(exception.GateRefused, self.gate.check,
                                    server, REBUILD)
        self.assertEqual(status, refusal.status)
        self.assertEqual(self.gate_name, refusal.gate)
        message = str(refusal)
        self.assertIn(server.uuid, message)
        for reason in reasons:
            self.assertIn(reason, message)
        # A refusal changes nothing.
        self.assertEqual(set(), server.instance.obj_what_changed())
        return message


class TestStateGate(GateTestCase):

    gate_class = state.StateGate
    gate_name = 'state'

    def _refused(self, server, reason):
        self.assertRefused(server, 409,
                           "invalid state for 'rebuild' from cell0", reason)

    def test_buried_server_is_allowed(self):
        self.assertAllowed(self._server())

    def test_other_vm_state_is_refused(self):
        self._refused(self._server(vm_state='active'),
                      'its vm_state is active, not error')

    def test_launched_server_is_refused(self):
        self._refused(self._server(launched_at=datetime.datetime(
            2024, 1, 1, tzinfo=datetime.timezone.utc)),
            'it was launched once')

    def test_task_in_progress_is_refused(self):
        self._refused(self._server(task_state='rebuilding'),
                      'task rebuilding is in progress')

    def test_deleted_instance_is_refused(self):
        self._refused(self._server(deleted=True), 'it is being deleted')

    def test_mapping_queued_for_delete_is_refused(self):
        self._refused(self._server(queued_for_delete=True),
                      'it is being deleted')


class TestLockGate(GateTestCase):

    gate_class = lock.LockGate
    gate_name = 'lock'

    def test_unlocked_server_is_allowed(self):
        self.assertAllowed(self._server())

    def test_locked_server_is_allowed_for_an_admin(self):
        admin = nova_context.RequestContext('admin', 'admin-project',
                                            is_admin=True)
        self.assertAllowed(self._server(context=admin, locked=True))

    def test_locked_server_is_refused_for_its_owner(self):
        server = self._server(locked=True)
        # Nova's own InstanceIsLocked message.
        self.assertEqual('Instance %s is locked' % server.uuid,
                         self.assertRefused(server, 409, 'is locked'))


class TestFaultGate(GateTestCase):

    gate_class = fault.FaultGate
    gate_name = 'fault'

    def test_no_valid_host_is_allowed(self):
        for message in ('No valid host was found. ',
                        'No valid host was found. There are not enough '
                        'hosts available.',
                        NO_VALID_HOST):
            self.assertAllowed(self._server(fault_message=message))

    def test_max_retries_exceeded_is_allowed(self):
        message = nova_exception.MaxRetriesExceeded(
            reason='Exhausted all hosts available for retrying build '
                   'failures for instance x.').format_message()
        self.assertTrue(message.startswith(
            'Exceeded maximum number of retries.'))
        self.assertAllowed(self._server(fault_message=message))

    def test_host_not_mapped_is_refused_with_the_reason(self):
        message = nova_exception.HostMappingNotFound(
            name='x').format_message()
        self.assertEqual("Host 'x' is not mapped to any cell", message)
        self.assertRefused(self._server(fault_message=message), 409,
                           'not buried in cell0 for lack of a valid host',
                           "because: Host 'x' is not mapped to any cell")

    def test_other_error_mentioning_no_valid_host_is_refused(self):
        # Only a message that starts like NoValidHost's is one.
        message = 'Build aborted: No valid host was found. '
        self.assertRefused(self._server(fault_message=message), 409,
                           message)

    def test_no_fault_is_refused(self):
        self.assertRefused(self._server(fault_message=None), 409,
                           'no fault recorded')

    def test_database_or_bus_outage_while_scheduling_is_allowed(self):
        # Nova records a non-Nova exception by its class name alone; the
        # conductor's own (DBConnectionError) or one that came back over
        # RPC from the scheduler (oslo.messaging's "_Remote" subclass).
        for message in ('DBConnectionError', 'DBDeadlock',
                        'MessagingTimeout', 'DBConnectionError_Remote',
                        'DBDeadlock_Remote'):
            self.assertAllowed(self._server(fault_message=message))

    def test_the_burials_a_wait_takes_in_are_those_it_lets_through(self):
        # By the exception names of Nova's notifications.
        for name in ('NoValidHost', 'NoValidHost_Remote',
                     'MaxRetriesExceeded_Remote', 'DBConnectionError',
                     'DBDeadlock_Remote', 'MessagingTimeout'):
            self.assertTrue(nova_compute.is_rebuildable_burial(name), name)
        for name in ('HostMappingNotFound', 'DBError', 'RemoteError', None,
                     'NoValidHost_RemoteX'):
            self.assertFalse(nova_compute.is_rebuildable_burial(name), name)

    def test_other_non_nova_exceptions_are_refused(self):
        for message in ('DBError', 'ValueError', 'RemoteError',
                        'DBConnectionErrorX', 'Timeout: DBConnectionError'):
            self.assertRefused(self._server(fault_message=message), 409,
                               'because: %s' % message)


class TestRecordGate(GateTestCase):

    gate_class = record.RecordGate
    gate_name = 'record'

    def test_recorded_server_is_allowed(self):
        self.assertAllowed(self._server(
            record=objects.CreateRecord(personality_files=0)))

    def test_unrecorded_server_is_refused(self):
        self.assertRefused(
            self._server(), 409,
            'created before nova-cell0-rebuild recorded server creates',
            'Delete it and create it again')

    def test_unrecorded_server_is_allowed_when_configured(self):
        self.conf.set_override('allow_unrecorded', True,
                               group='cell0_rebuild')
        self.assertAllowed(self._server())


class TestPersonalityGate(GateTestCase):

    gate_class = personality.PersonalityGate
    gate_name = 'personality'

    def setUp(self):
        super().setUp()
        self.set_marker = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_servers.'
            'set_cell_system_metadata', return_value=True)).mock

    def _refused(self, server):
        self.assertRefused(
            server, 409, 'created with personality files',
            'created in a way that cannot support this request')

    def test_server_without_personality_files_is_allowed(self):
        self.assertAllowed(self._server(
            record=objects.CreateRecord(personality_files=0)))
        self.assertAllowed(self._server())
        self.set_marker.assert_not_called()

    def test_recorded_personality_files_are_refused_and_marked(self):
        server = self._server(
            record=objects.CreateRecord(personality_files=2))
        self._refused(server)
        self.set_marker.assert_called_once_with(
            mock.ANY, server.cell0, server.uuid,
            system_metadata.CREATED_WITH_PERSONALITY_FILES, 'True')
        # The caller need not be an admin to have the marker written.
        self.assertTrue(self.set_marker.call_args[0][0].is_admin)
        self.assertFalse(self.context.is_admin)

    def test_marked_server_is_refused_without_writing_again(self):
        marked = {system_metadata.CREATED_WITH_PERSONALITY_FILES: 'True'}
        self._refused(self._server(system_metadata=marked))
        self._refused(self._server(
            system_metadata=marked,
            record=objects.CreateRecord(personality_files=1)))
        self.set_marker.assert_not_called()


class TestQuotaGate(GateTestCase):

    gate_class = quota.QuotaGate
    gate_name = 'quota'

    def setUp(self):
        super().setUp()
        self.quota_refusal = self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.adapters.nova_quota.quota_refusal',
            return_value=None)).mock

    def test_project_within_quota_is_allowed(self):
        server = self._server()
        self.assertAllowed(server)
        self.quota_refusal.assert_called_once_with(self.context,
                                                   server.instance)

    def test_project_over_quota_is_refused_with_novas_message(self):
        message = nova_exception.TooManyInstances(
            overs='cores', req=1, used=20, allowed=20).format_message()
        self.quota_refusal.return_value = message
        server = self._server()
        refusal = self.assertRaises(exception.GateRefused, self.gate.check,
                                    server, REBUILD)
        # Exactly what Nova's create answers: it names no server.
        self.assertEqual(403, refusal.status)
        self.assertEqual('quota', refusal.gate)
        self.assertEqual(message, str(refusal))
        self.assertIn('Quota exceeded for cores', str(refusal))
