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

"""A rebuilt server's history once it is deleted and archived (issue 25).

Pre-emptible clouds delete servers all the time, usually before anyone
lists their actions: the history a move stashed must reach Nova's shadow
tables with the server anyway. While the server lives, its ec2 id is the
one its guest booted with, and Nova's own rows in its cell are never
deleted. A DELETE Nova answers 204 without deleting anything (termination
disabled) forgets nothing. Heal says what it did, not what it meant to.
"""

import io

import eventlet
import fixtures
from nova.cmd import manage
from nova import context as nova_context
from nova import objects as nova_objects
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import test_history
from nova_cell0_rebuild.tests.functional import test_move_faults
from nova_cell0_rebuild.tests.functional import test_move_lease

EVENT = test_history.EVENT


class _AfterDeleteTestCase(test_history._HistoryTestCase):

    def _archive(self):
        """Nova's ``nova-manage db archive_deleted_rows --all-cells``."""
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        manage.DbCommands().archive_deleted_rows(
            max_rows=1000, until_complete=True, all_cells=True)

    def _rows(self, cell_name, sql, server_id):
        with self._cell_engine(cell_name).connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql),
                                                       {'uuid': server_id})]

    def _actions_in(self, cell_name, server_id, shadow=False):
        """(action, request id, [(event, result)]) of the server, by id."""
        prefix = 'shadow_' if shadow else ''
        actions = self._rows(cell_name, (
            'SELECT id, action, request_id FROM %sinstance_actions '
            'WHERE instance_uuid = :uuid ORDER BY id' % prefix), server_id)
        found = []
        for action_id, action, request_id in actions:
            with self._cell_engine(cell_name).connect() as conn:
                events = [tuple(row) for row in conn.execute(sa.text(
                    'SELECT event, result FROM %sinstance_actions_events '
                    'WHERE action_id = :id ORDER BY id' % prefix),
                    {'id': action_id})]
            found.append((action, request_id, events))
        return found

    def _faults_in(self, cell_name, server_id, shadow=False):
        return self._rows(cell_name, (
            'SELECT code, message, created_at FROM %sinstance_faults '
            'WHERE instance_uuid = :uuid ORDER BY created_at, id'
            % ('shadow_' if shadow else '')), server_id)

    def _stash(self, server_id):
        return objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, server_id)

    def _rebuilt_from_burial(self, name='preemptible'):
        """A server buried, then rebuilt into cell1; and what it had."""
        server, create_id = self._buried(name=name)
        faults = self._faults('cell0', server['id'])
        self._start_compute('host1')
        rebuild_id = self._rebuilt(server)
        return server, create_id, rebuild_id, faults


class HistoryAfterArchiveTest(_AfterDeleteTestCase):

    def test_deleted_before_anyone_listed_its_actions_then_archived(self):
        server, create_id, rebuild_id, faults = self._rebuilt_from_burial()
        # Nobody lists its actions: the history is still stashed.
        self.assertIsNotNone(self._stash(server['id']))

        self._delete_server(server)
        self._archive()

        shadow = self._actions_in('cell1', server['id'], shadow=True)
        by_request = {request_id: (action, events)
                      for action, request_id, events in shadow}
        # The original create, with its request id and its burial.
        self.assertEqual('create', by_request[create_id][0])
        self.assertEqual([(EVENT, 'Error')], by_request[create_id][1])
        # The rebuild, named so, with compute's build.
        self.assertEqual('rebuild', by_request[rebuild_id][0])
        self.assertIn('compute__do_build_and_run_instance',
                      [event for event, _ in by_request[rebuild_id][1]])
        self.assertEqual(['create', 'delete', 'rebuild'],
                         sorted(action for action, _ in by_request.values()))
        # The burial's fault.
        self.assertEqual(faults, self._faults_in('cell1', server['id'],
                                                 shadow=True))
        self.assertTrue(any('No valid host' in message
                            for _, message, _ in faults))
        # Nothing of it is left outside the shadow tables, ours included.
        for cell_name in ('cell0', 'cell1'):
            self.assertEqual([], self._actions_in(cell_name, server['id']))
            self.assertEqual([], self._faults_in(cell_name, server['id']))
        self.assertIsNone(self._stash(server['id']))
        result = purge.purge(self.admin_context)
        self.assertEqual(([], []), (result['server_histories'],
                                    result['unmapped_server_histories']))

    def test_purge_writes_back_before_archive_never_drops(self):
        # Deleted behind the plugin's back (its DELETE hook could not write
        # the history): purge writes it back, archive then takes it along.
        server, create_id, rebuild_id, _ = self._rebuilt_from_burial()
        with fixtures.MockPatch(
                'nova_cell0_rebuild.api.server_delete._write_back_history'):
            self._delete_server(server)
        self.assertIsNotNone(self._stash(server['id']))
        result = purge.purge(self.admin_context)
        self.assertEqual([server['id']], result['server_histories'])
        self._archive()
        self.assertEqual(
            {'create', 'rebuild', 'delete'},
            {action for action, _, _ in self._actions_in(
                'cell1', server['id'], shadow=True)})
        self.assertIsNone(self._stash(server['id']))

    def test_purge_keeps_the_history_of_a_server_archived_unwritten(self):
        # Deleted and archived before its history was written back (its
        # DELETE could not write it): purge keeps it with a deleted cell0
        # row of the server, which the next archive moves to the shadow
        # tables; the stash goes only then, never dropped.
        server, create_id, rebuild_id, faults = self._rebuilt_from_burial()
        with fixtures.MockPatch(
                'nova_cell0_rebuild.api.server_delete._write_back_history'):
            self._delete_server(server)
        self._archive()
        result = purge.purge(self.admin_context)
        self.assertEqual([server['id']], result['server_histories'])
        self.assertEqual([], result['unmapped_server_histories'])
        self.assertIsNone(self._stash(server['id']))
        self._archive()
        shadow = {request_id: action for action, request_id, _ in
                  self._actions_in('cell0', server['id'], shadow=True)}
        self.assertEqual('create', shadow[create_id])
        self.assertEqual(faults, self._faults_in('cell0', server['id'],
                                                 shadow=True))
        self.assertEqual([], self._actions_in('cell0', server['id']))


class Ec2IdTest(_AfterDeleteTestCase):

    def test_ec2_id_never_changes_under_the_guest(self):
        # cell1 hands out ec2 ids 1..3; cell0's id of the buried server, 1,
        # is freed in cell1 by delete and archive: the old code took it
        # back at the first write-back, after the guest had booted.
        self._start_compute('host1')
        active = [self._wait_for_state_change(self._create(name='a%d' % i)[0],
                                              'ACTIVE') for i in range(3)]
        self._delete_server(active[0])
        self._archive()
        self._set_capacity(False)
        server, _ = self._buried(name='guest')
        self.assertEqual(1, self._ec2_id('cell0', server['id']))
        self._set_capacity(True)
        self._rebuilt(server)
        booted_with = self._ec2_id('cell1', server['id'])
        self.assertIsNotNone(booted_with)

        self.assertEqual(2, len(self._actions(server['id'])))  # written
        self.assertIsNone(self._stash(server['id']))
        self.assertEqual(booted_with, self._ec2_id('cell1', server['id']))
        self._delete_server(server)
        # What archive will move to the shadow tables. (A second archive
        # here would trip over SQLite reusing archived ids, not over us.)
        self.assertEqual([(booted_with,)], self._rows(
            'cell1', 'SELECT id FROM instance_id_mappings WHERE '
            'uuid = :uuid', server['id']))

    def test_ec2_id_kept_when_buried_again_in_cell0(self):
        # No guest ever runs in cell0: there the old id comes back.
        server, _ = self._buried(name='twice')
        ec2 = self._ec2_id('cell0', server['id'])
        self._rebuilt(server, state='ERROR')
        self.assertEqual(2, len(self._actions(server['id'])))
        self.assertEqual(ec2, self._ec2_id('cell0', server['id']))


class FaultWriteBackTest(_AfterDeleteTestCase):

    def _nova_fault(self, server_id, message):
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            nova_objects.InstanceFault(
                cctxt, instance_uuid=server_id, code=500, message=message,
                details='', host='host1').create()

    def _fault_rows(self, server_id):
        return self._rows('cell1', (
            'SELECT id, code, message, created_at FROM instance_faults '
            'WHERE instance_uuid = :uuid ORDER BY id'), server_id)

    def _latest_message(self, server_id):
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            latest = nova_objects.InstanceFaultList.\
                get_latest_by_instance_uuids(cctxt, [server_id])
        return [fault.message for fault in latest]

    def test_nova_rows_in_a_real_cell_are_never_deleted(self):
        server, _, _, faults = self._rebuilt_from_burial()
        self._nova_fault(server['id'], 'a fault of the real cell')
        novas = self._fault_rows(server['id'])
        self.assertEqual(1, len(novas))

        self._actions(server['id'])  # the write-back of a live server

        # Nova's row is where it was, its id unchanged, and still the
        # fault Nova shows: the burial's wait for the server's delete.
        self.assertEqual(novas, self._fault_rows(server['id']))
        self.assertEqual(['a fault of the real cell'],
                         self._latest_message(server['id']))
        self.assertIsNotNone(self._stash(server['id']))

        self._delete_server(server)
        rows = self._fault_rows(server['id'])
        self.assertEqual(novas[0], rows[0])
        self.assertEqual(faults, [row[1:] for row in rows[1:]])
        self.assertIsNone(self._stash(server['id']))
        self._archive()
        self.assertEqual(sorted(faults + [novas[0][1:]],
                                key=lambda fault: fault[2]),
                         self._faults_in('cell1', server['id'], shadow=True))

    def test_faults_added_beside_none_of_novas(self):
        server, _, _, faults = self._rebuilt_from_burial()
        self._actions(server['id'])
        self.assertEqual(faults, [row[1:] for row in self._fault_rows(
            server['id'])])
        self.assertIsNone(self._stash(server['id']))


class DeleteThatDeletesNothingTest(_AfterDeleteTestCase,
                                   test_move_faults.MoveChecks):

    def _terminate_disabled(self, server_id, cell_name='cell0'):
        cell = (self._cell0() if cell_name == 'cell0'
                else self.cell_mappings[cell_name])
        with nova_context.target_cell(self.admin_context, cell) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(cctxt, server_id)
            instance.disable_terminate = True
            instance.save()

    def _delete_answered_204(self, server_id):
        resp = self.api.api_delete('/servers/%s' % server_id,
                                   check_response_status=False)
        self.assertEqual(204, resp.status, resp.body)

    def test_a_live_move_keeps_its_journal(self):
        server, _ = self._buried(name='protected')
        self._terminate_disabled(server['id'])
        self._start_compute('host1')
        deleted = []

        def delete_once():
            if not deleted:
                deleted.append(True)
                self._delete_answered_204(server['id'])
        with self._inject('nova_build_requests.new_build_request',
                          delete_once):
            resp = self._rebuild(server['id'])
        self.assertEqual([True], deleted)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server['id']))
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server['id'])
        self.assertEqual((fields.MoveStatus.DONE, fields.MoveStep.CAST_SENT),
                         (journal.status, journal.step))
        self.assertIn('did not delete it (termination disabled?)',
                      self.stdlog.output)

    def test_a_rebuilt_server_keeps_its_history_stashed(self):
        server, _, _, _ = self._rebuilt_from_burial()
        self._terminate_disabled(server['id'], cell_name='cell1')
        self._delete_answered_204(server['id'])
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])['status'])
        self.assertIsNotNone(self._stash(server['id']))


class HealReportTest(test_move_lease._LeaseTestBase):
    """Heal reports what it did when another heal took its lease."""

    def _died_after_the_cast(self):
        def die():
            raise test_move_faults.SimulatedCrash()
        server = self._buried_with_room()
        with self._inject('journal:finish', die):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])
        self._wait_for_state_change(server, 'ACTIVE')
        return server

    def _first_heal_held_at(self, target, server_id):
        """A heal paused in *target*; a second heal once its lease expired.
        """
        hold = test_move_lease._Hold()
        real = getattr(move_journal.MoveJournal, target)
        calls = []

        def held(journal, *args, **kwargs):
            calls.append(True)
            if len(calls) == 1:
                hold()
            return real(journal, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cell0_rebuild.objects.move_journal.MoveJournal.' + target,
            held))
        self._expire_move_leases(server_id)
        first = eventlet.spawn(heal.heal, self.admin_context,
                               self.lease_seconds)
        hold.reached.wait()
        second = self._heal_after_restart(server_id)
        hold.release.send()
        return first.wait(), second

    def test_done_by_another_heal_is_not_reported_deleted(self):
        server = self._died_after_the_cast()
        first, second = self._first_heal_held_at('finish', server['id'])
        self.assertEqual([(server['id'], fields.MoveStep.CASTING,
                           heal.DONE)], second)
        self.assertEqual([(server['id'], fields.MoveStep.CASTING,
                           heal.TAKEN_OVER)], first)
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])['status'])

    def test_deleted_branch_is_fenced(self):
        # The move died before its cast, then the server was deleted with
        # the plugin's DELETE hook failing: heal forgets it. The first heal
        # pauses before it forgets the journal; a second one takes over.
        def die():
            raise test_move_faults.SimulatedCrash()
        server = self._buried_with_room()
        with self._inject('nova_request_specs.complete_request_spec', die):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])
        with fixtures.MockPatch(
                'nova_cell0_rebuild.api.record_keeping.forget_deleted',
                side_effect=RuntimeError('the plugin database is down')):
            self._delete_server(server)
        # The second heal itself is held in its turn and never finishes
        # before the first resumes: the first must not forget a journal
        # another holder has.
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server['id'])
        self.assertIsNotNone(journal)
        hold = test_move_lease._Hold()
        seen = []

        def pausing(real):
            def first_pauses(journal, *args, **kwargs):
                seen.append(True)
                if len(seen) == 1:
                    hold()  # meanwhile another heal takes the lease over
                return real(journal, *args, **kwargs)
            return first_pauses
        for name in ('destroy', 'destroy_if_unchanged'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova_cell0_rebuild.objects.move_journal.MoveJournal.' +
                name, pausing(getattr(move_journal.MoveJournal, name))))
        self._expire_move_leases(server['id'])
        first = eventlet.spawn(heal.heal, self.admin_context,
                               self.lease_seconds)
        hold.reached.wait()
        self._expire_move_leases(server['id'])
        current = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server['id'])
        current.take_over('another-heal', self.lease_seconds)
        hold.release.send()
        first = first.wait()
        self.assertEqual([(server['id'], fields.MoveStep.CELL0_ROWS_REMOVED,
                           heal.TAKEN_OVER)], first)
        # The journal is the new holder's, which finishes the job.
        self.assertIsNotNone(objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server['id']))
        self.assertEqual(
            [(server['id'], fields.MoveStep.CELL0_ROWS_REMOVED,
              heal.DELETED)], self._heal_after_restart(server['id']))
        with db_api.reader(self.admin_context) as session:
            self.assertEqual(0, session.query(models.MoveJournal).filter_by(
                instance_uuid=server['id']).count())
