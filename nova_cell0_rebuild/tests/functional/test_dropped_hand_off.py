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

"""A hand-off Nova's conductor dropped: heal buries the server again.

The conductor's ``schedule_and_build_instances`` fails after its scheduler
claimed the server's resources and before it wrote the instance in a cell,
as it does when its database fails over under it (the Galera cloud job
kills the writer then): Nova neither buries nor retries it, and the
server stays in BUILD as a BuildRequest with an allocation. Once the
hand-off is older than ``[cell0_rebuild] hand_off_timeout``, heal releases
the allocation and buries it in cell0 again with its fault and history;
rebuilt, it is ACTIVE with one allocation, same UUID, nothing lost.
"""

import datetime
import pkgutil

import eventlet
from eventlet import event
import fixtures
from keystoneauth1 import exceptions as ks_exc
from nova.conductor import manager as nova_conductor
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova import objects as nova_objects
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_delete_races
from nova_cell0_rebuild.tests.functional import test_move_faults

HAND_OFF_TIMEOUT = test_delete_races.HAND_OFF_TIMEOUT


class _DroppedHandOff(test_move_faults.MoveChecks):
    """A conductor that drops the hand-off, and heal after the timeout."""

    def _drop_the_hand_off(self, hold=None):
        """The conductor loses its database once its scheduler claimed.

        :param hold: an event the conductor waits for once it has the
            hand-off, before its scheduler claims (``received`` is sent
            then).
        :returns: an event sent when the conductor gives up on the build:
            the error propagates out of its ``schedule_and_build_instances``
            with nothing written after it.
        """
        dropped = event.Event()
        self.received = event.Event()
        scheduled = []
        real_schedule = nova_conductor.ComputeTaskManager._schedule_instances
        real_get_by_host = nova_objects.HostMapping.get_by_host

        def schedule(*args, **kwargs):
            if hold is not None and not self.received.ready():
                self.received.send()
                hold.wait()
            host_lists = real_schedule(*args, **kwargs)
            scheduled.append(True)
            return host_lists

        def get_by_host(cls, context, host):
            if not scheduled or dropped.ready():
                # Before the scheduler claimed, or the next build.
                return real_get_by_host(context, host)
            dropped.send()
            raise db_exc.DBConnectionError('the writer node is gone')
        self.useFixture(fixtures.MonkeyPatch(
            'nova.conductor.manager.ComputeTaskManager._schedule_instances',
            schedule))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.objects.host_mapping.HostMapping.get_by_host',
            classmethod(get_by_host)))
        return dropped

    def _allocations(self, server_id):
        return self.placement.get(
            '/allocations/%s' % server_id).body['allocations']

    def _heal(self, later=0):
        """Heal as if it ran *later* seconds from now (heal's clock only).
        """
        return test_delete_races.heal_later(self.admin_context,
                                            self.lease_seconds, later=later)

    def _assert_the_next_heal_finishes_the_burial(self, server_id):
        """Once the reopened move's lease expired, heal buries the server
        in cell0, its allocation released.
        """
        self._expire_move_leases(server_id)
        self.assertEqual(
            [(server_id, 'cell0_rows_removed', heal.ROLLED_BACK)],
            self._heal())
        self.assertEqual(('cell0', True, False, False),
                         self._where(server_id))
        self.assertEqual({}, self._allocations(server_id))

    def _dropped(self, buried=None):
        """A buried server whose rebuild the conductor dropped.

        :returns: its id and what its user sees of it, from before.
        """
        self._set_capacity(False)
        server = (buried or self._buried)()
        fields_before = self._user_fields(server['id'])
        self._set_capacity(True)
        dropped = self._drop_the_hand_off()
        self.assertEqual(202, self._rebuild(server['id']).status)
        with eventlet.Timeout(60):
            dropped.wait()
        return server['id'], fields_before


class DroppedHandOffTest(_DroppedHandOff, base.Cell0RebuildTestCase):

    def test_dropped_hand_off_is_buried_again_then_rebuilt(self):
        server_id, fields_before = self._dropped()
        # What Nova leaves: BUILD, a BuildRequest in no cell, and the
        # allocation its scheduler claimed.
        self.assertEqual(('none', False, True, False),
                         self._where(server_id))
        self.assertEqual('BUILD', self.api.get_server(server_id)['status'])
        self.assertEqual(1, len(self._allocations(server_id)))

        # Within the timeout heal leaves it: the conductor may still work.
        self.assertEqual([], self._heal())
        self.assertEqual(('none', False, True, False),
                         self._where(server_id))

        self.assertEqual([(server_id, 'cast_sent', heal.REBURIED)],
                         self._heal(later=HAND_OFF_TIMEOUT + 1))
        self.assertEqual(('cell0', True, False, False),
                         self._where(server_id))
        self.assertEqual({}, self._allocations(server_id))
        server = self._wait_for_state_change(
            self.api.get_server(server_id), 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(fields_before, self._user_fields(server_id))
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertEqual(
            (fields.MoveStatus.ROLLED_BACK, heal.HAND_OFF_DROPPED),
            (journal.status, journal.last_error))
        # Healed once: the next heal has nothing to do.
        self.assertEqual([], self._heal(later=HAND_OFF_TIMEOUT + 1))

        self.assertEqual(202, self._rebuild(server_id).status)
        self._wait_for_state_change(self.api.get_server(server_id),
                                    'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server_id))
        self.assertEqual(1, len(self._allocations(server_id)))
        self.assertEqual(fields_before, self._user_fields(server_id))

    def test_heal_stopped_after_reopening_releases_the_allocation(self):
        # Heal took the hand-off back, then its process died before it
        # released anything: the heal that takes the move over once its
        # lease expired finishes the burial, allocation included.
        server_id, _fields = self._dropped()
        with fixtures.MockPatch(
                'nova_cell0_rebuild.adapters.nova_dropped_hand_offs.'
                'release_allocation',
                side_effect=test_move_faults.SimulatedCrash):
            self.assertRaises(test_move_faults.SimulatedCrash, self._heal,
                              later=HAND_OFF_TIMEOUT + 1)
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertEqual((fields.MoveStatus.IN_PROGRESS,
                          fields.MoveStep.CELL0_ROWS_REMOVED),
                         (journal.status, journal.step))
        self.assertEqual(1, len(self._allocations(server_id)))

        self._assert_the_next_heal_finishes_the_burial(server_id)

    def test_server_deleted_after_the_drop_is_not_buried(self):
        server_id, _fields = self._dropped()
        self.api.delete_server(server_id)
        self._wait_until_deleted({'id': server_id})
        # Its DELETE kept the hand-off (its conductor's claim could have
        # been left): heal releases what placement holds and forgets it.
        self.assertEqual([(server_id, 'cast_sent', heal.CLAIM_RELEASED)],
                         self._heal(later=HAND_OFF_TIMEOUT + 1))
        self.assertEqual('deleted', self._where(server_id)[0])
        self.assertEqual({}, self._allocations(server_id))

    def test_instance_row_in_a_cell_is_left_alone(self):
        # The conductor wrote the instance in cell1, then lost the API
        # database before it mapped it: not the plugin's to bury.
        server_id, _fields = self._dropped()
        build_request = nova_objects.BuildRequest.get_by_instance_uuid(
            self.admin_context, server_id)
        instance = build_request.get_new_instance(self.admin_context)
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            instance._context = cctxt
            instance.create()
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertEqual([(server_id, 'cast_sent', heal.IN_A_CELL % 'cell1')],
                         self._heal(later=HAND_OFF_TIMEOUT + 1))
        self.assertEqual(('none', False, True, True),
                         self._where(server_id))
        # Nothing taken or released: the move is as the conductor left it.
        self.assertEqual(1, len(self._allocations(server_id)))
        after = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertEqual(
            (journal.status, journal.step, journal.lease_token,
             journal.owner),
            (after.status, after.step, after.lease_token, after.owner))

    def test_the_age_of_the_hand_off_decides_not_the_servers(self):
        # A server created long before its rebuild: its BuildRequest is
        # dated with its creation, the hand-off is recent.
        server_id, _fields = self._dropped()
        with api_db_api.context_manager.writer.using(
                self.admin_context) as session:
            session.execute(sa.text(
                'UPDATE build_requests SET created_at = :old '
                'WHERE instance_uuid = :uuid'), {
                    'old': timeutils.utcnow() - datetime.timedelta(
                        seconds=2 * HAND_OFF_TIMEOUT),
                    'uuid': server_id})
        self.assertEqual([], self._heal())
        self.assertEqual([], self._heal(later=HAND_OFF_TIMEOUT - 60))
        self.assertEqual(('none', False, True, False),
                         self._where(server_id))
        self.assertEqual([(server_id, 'cast_sent', heal.REBURIED)],
                         self._heal(later=HAND_OFF_TIMEOUT + 1))

    def test_placement_unreachable_leaves_the_burial_to_the_next_heal(self):
        # Nova's report client logs and returns None when placement cannot
        # be reached: heal must not bury the server with the claim kept
        # (the next build's claim of the same consumer would fail).
        server_id, _fields = self._dropped()
        with fixtures.MockPatch(
                'nova.scheduler.client.report.SchedulerReportClient.delete',
                side_effect=ks_exc.ConnectFailure('placement is away')):
            (result,) = self._heal(later=HAND_OFF_TIMEOUT + 1)
        self.assertEqual((server_id, 'cast_sent'), result[:2])
        self.assertIn('Placement could not be reached', result[2])
        self.assertEqual(('none', False, True, False),
                         self._where(server_id))
        self.assertEqual(1, len(self._allocations(server_id)))
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertEqual(fields.MoveStatus.IN_PROGRESS, journal.status)

        self._assert_the_next_heal_finishes_the_burial(server_id)


#: The dropped hand-off's heal, step by step, where a DELETE may land.
HEAL_STEPS = [
    'nova_cell0_rebuild.adapters.nova_dropped_hand_offs.cells_holding',
    'nova_cell0_rebuild.objects.move_journal.MoveJournal.reopen',
    'nova_cell0_rebuild.adapters.nova_dropped_hand_offs.release_allocation',
    'nova_cell0_rebuild.tasks.server_history.bury_again',
    'nova_cell0_rebuild.adapters.nova_build_requests.'
    'remap_to_cell0_and_drop_build_request',
]


class DeleteDuringTheHandOffTest(_DroppedHandOff,
                                 test_delete_races.DeleteRacesTestBase):
    """The user deletes the server while the conductor has its hand-off;
    then the conductor's scheduler claims, and the conductor drops the
    build before it looks for the BuildRequest (which would have released
    the claim). Found by the interleaving explorer (rebuild_a, drop,
    delete).
    """

    def _deleted_during_the_hand_off(self):
        self._set_capacity(False)
        server = self._create_grouped_buried_server()
        self._set_capacity(True)
        hold = event.Event()
        dropped = self._drop_the_hand_off(hold=hold)
        self.assertEqual(202, self._rebuild(server['id']).status)
        with eventlet.Timeout(60):
            self.received.wait()
        self._delete(server['id'])
        self._wait_until_deleted(server)
        hold.send()
        with eventlet.Timeout(60):
            dropped.wait()
        return server['id']

    def test_heal_releases_the_claim_after_the_timeout(self):
        server_id = self._deleted_during_the_hand_off()
        # The conductor's claim, which nothing else would release.
        self.assertEqual(1, len(self._allocations(server_id)))
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        self.assertTrue(journal.deleted_after_hand_off())
        # Within the timeout the conductor may still be at it.
        self.assertEqual([], self._heal(later=HAND_OFF_TIMEOUT - 60))
        self.assertEqual(1, len(self._allocations(server_id)))
        self.assertEqual(
            [(server_id, 'cast_sent', heal.CLAIM_RELEASED)],
            self._heal(later=HAND_OFF_TIMEOUT + 1))
        self.assertEqual([], self._heal(later=HAND_OFF_TIMEOUT + 1))
        self._assert_nothing_left({'deleted during the hand-off': server_id})

    def test_purge_leaves_the_marked_hand_off_to_heal(self):
        server_id = self._deleted_during_the_hand_off()
        self._archive()
        purged = purge.purge(self.admin_context,
                             before=timeutils.utcnow() + datetime.timedelta(
                                 days=1))
        self.assertNotIn(server_id, purged['move_journal'])
        self.assertEqual(1, len(self._allocations(server_id)))
        self.assertEqual(
            [(server_id, 'cast_sent', heal.CLAIM_RELEASED)],
            self._heal(later=HAND_OFF_TIMEOUT + 1))
        self._assert_nothing_left({'deleted during the hand-off': server_id})

    def test_a_live_instance_row_is_left_alone(self):
        # Not what Nova does (its conductor destroys the row it wrote
        # when it finds the BuildRequest gone): heal never releases what
        # a live server may use.
        server_id = self._deleted_during_the_hand_off()
        instance = nova_objects.Instance(
            self.admin_context, uuid=server_id, project_id='p',
            user_id='u')
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            instance._context = cctxt
            instance.create()
        self.assertEqual(
            [(server_id, 'cast_sent', heal.IN_A_CELL % 'cell1')],
            self._heal(later=HAND_OFF_TIMEOUT + 1))
        self.assertEqual(1, len(self._allocations(server_id)))


class DeleteDuringTheBurialTest(_DroppedHandOff,
                                test_delete_races.DeleteRacesTestBase):
    """The user deletes the server at each step of the heal that buries it
    again: the DELETE wins, and after Nova's archive nothing is left.
    """

    def test_delete_at_every_step_of_the_burial(self):
        servers, outcomes = {}, {}
        for step in HEAL_STEPS:
            server_id, _fields = self._dropped(
                buried=self._create_grouped_buried_server)
            servers[step] = server_id
            real = pkgutil.resolve_name(step)
            fired = []

            def delete_first(*args, _real=real, _id=server_id, **kwargs):
                if not fired:
                    fired.append(True)
                    self._delete(_id)
                return _real(*args, **kwargs)
            with fixtures.MonkeyPatch(step, delete_first):
                outcomes[step] = [outcome for uuid, _step, outcome in
                                  self._heal(later=HAND_OFF_TIMEOUT + 1)
                                  if uuid == server_id]
            self.assertEqual([True], fired, step)
        # Heal says what happened: a DELETE before it took the move back
        # forgot the journal (the move was not heal's to take); after it,
        # heal removed what the deleted server left.
        self.assertEqual(
            dict((step, [heal.CONTENDED if number < 2 else heal.DELETED])
                 for number, step in enumerate(HEAL_STEPS)), outcomes)
        self._assert_nothing_left(servers)
