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

"""The move is a lease: heal and errors after the cast, on real Nova.

- Once the cast may have been sent the move only goes forward: whatever
  fails after it, the conductor builds the server and it lands once.
- Heal racing a live move at each of its steps: while the lease holds,
  heal changes nothing; when it expired (a slow step), heal takes it over
  and the slow move stops at its next step without touching the server.
- A rebuild request heals an interrupted move only once the caller is
  authorized for the server.
"""

import eventlet
from eventlet import event

from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults

BOUNDARIES = test_move_faults.BOUNDARIES
SimulatedCrash = test_move_faults.SimulatedCrash

#: What heal does to a move that is slow, not dead, at each boundary once
#: its lease expired, and how that move's own request then ends.
TAKEN_OVER = {
    'claimed': (heal.ROLLED_BACK, 409),
    'build_request_written': (heal.ROLLED_BACK, 409),
    'rows gone, unrecorded': (heal.ROLLED_BACK, 409),
    'cell0_rows_removed': (heal.ROLLED_BACK, 409),
    # The move had recorded that it casts: heal must not undo it.
    'casting': (heal.LEFT_ALONE, 202),
}


class _Hold(object):
    """Stops a move at one point until the test lets it go on."""

    def __init__(self):
        self.reached = event.Event()
        self.release = event.Event()

    def __call__(self):
        self.reached.send()
        self.release.wait()


class _LeaseTestBase(test_move_faults.MoveChecks, base.Cell0RebuildTestCase):

    def _buried_with_room(self):
        self._set_capacity(False)
        server = self._buried()
        self._set_capacity(True)
        return server

    def _snapshot(self, server_id):
        """Where the server is, row by row, and its journal."""
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server_id)
        return (self._where(server_id), self._cell0_rows(server_id),
                journal.status, journal.step, journal.lease_token,
                journal.owner)

    def _rebuild_in_background(self, server_id):
        return eventlet.spawn(self._rebuild, server_id)

    def _assert_rebuilt(self, server, before):
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server['id']))
        self.assertEqual({}, self._cell0_rows(server['id']))
        self.assertEqual(before, self._user_fields(server['id']))

    def _assert_back_in_cell0_then_rebuilt(self, server, before):
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual('ERROR',
                         self.admin_api.get_server(server['id'])['status'])
        self.assertEqual(before, self._user_fields(server['id']))
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._assert_rebuilt(server, before)


class ForwardAfterTheCastTest(_LeaseTestBase):
    """An error once the conductor may have the server is never undone."""

    def _fail_after_cast(self, function, effect):
        casts = self._record_casts()
        server = self._buried_with_room()
        before = self._user_fields(server['id'])
        with self._inject(function, effect):
            resp = self._rebuild(server['id'])
        # The conductor was asked once for the create, once for the
        # rebuild, and the server lands: not buried again by an undo.
        self.assertEqual([server['id'], server['id']], casts)
        self._assert_rebuilt(server, before)
        return resp, server

    def _raise(self):
        raise RuntimeError('injected')

    def test_journal_write_failing_after_the_cast(self):
        # A database blip when the journal records the hand-off.
        resp, _ = self._fail_after_cast('journal:finish', self._raise)
        self.assertEqual(202, resp.status, resp.body)

    def test_cast_raising_after_it_was_sent(self):
        # The message went out, then the call raised: Nova's own create
        # answers 500 then too, and the server is built all the same.
        resp, server = self._fail_after_cast(
            'after:nova_build_requests.schedule_and_build', self._raise)
        self.assertEqual(500, resp.status, resp.body)
        self.assertIn('computeFault', resp.body)
        journal = objects.MoveJournal.get_by_instance_uuid(
            self.admin_context, server['id'])
        self.assertIn('cast raised', journal.last_error)

    def test_lease_lost_after_the_cast(self):
        # Heal took the lease just after the cast was sent (a move slower
        # than its lease): the move's last journal write is fenced off.
        def take_over():
            with db_api.writer(self.admin_context) as session:
                session.query(models.MoveJournal).update(
                    {'lease_token': models.MoveJournal.lease_token + 1},
                    synchronize_session=False)
        resp, _ = self._fail_after_cast(
            'after:nova_build_requests.schedule_and_build', take_over)
        self.assertEqual(202, resp.status, resp.body)

    def test_process_dies_after_the_cast_then_heal(self):
        def die():
            raise SimulatedCrash()
        casts = self._record_casts()
        server = self._buried_with_room()
        before = self._user_fields(server['id'])
        with self._inject('journal:finish', die):
            self.assertRaises(SimulatedCrash, self._rebuild, server['id'])
        self.assertEqual([server['id'], server['id']], casts)
        self._assert_rebuilt(server, before)
        self.assertEqual(
            [(server['id'], fields.MoveStep.CASTING, heal.DONE)],
            self._heal_after_restart())
        self._assert_rebuilt(server, before)


class HealRacesLiveMoveTest(_LeaseTestBase):
    """Heal at every step of a move that is still running."""

    def test_heal_leaves_a_live_move_alone_at_every_step(self):
        for boundary, function in BOUNDARIES:
            server = self._buried_with_room()
            before = self._user_fields(server['id'])
            hold = _Hold()
            with self._inject(function, hold):
                thread = self._rebuild_in_background(server['id'])
                hold.reached.wait()
                snapshot = self._snapshot(server['id'])
                # The listing skips it, and a heal that read the journal
                # just before (as a listing would) does nothing either.
                self.assertEqual([], heal.heal(self.admin_context,
                                               self.lease_seconds))
                journal = objects.MoveJournal.get_by_instance_uuid(
                    self.admin_context, server['id'])
                self.assertEqual(heal.ALIVE, heal.heal_move(
                    self.admin_context, journal, self.lease_seconds),
                    boundary)
                self.assertEqual(snapshot, self._snapshot(server['id']),
                                 boundary)
                hold.release.send()
                resp = thread.wait()
            self.assertEqual(202, resp.status, (boundary, resp.body))
            self._assert_rebuilt(server, before)

    def test_heal_takes_over_a_slow_move_at_every_step(self):
        for boundary, function in BOUNDARIES:
            server = self._buried_with_room()
            before = self._user_fields(server['id'])
            hold = _Hold()
            outcome, status = TAKEN_OVER[boundary]
            with self._inject(function, hold):
                thread = self._rebuild_in_background(server['id'])
                hold.reached.wait()
                healed = self._heal_after_restart(server['id'])
                self.assertEqual(outcome, healed[0][2], boundary)
                hold.release.send()
                resp = thread.wait()
            self.assertEqual(status, resp.status, (boundary, resp.body))
            if status == 202:
                self._assert_rebuilt(server, before)
            else:
                self.assertIn('another rebuild is in progress',
                              str(resp.body))
                self._assert_back_in_cell0_then_rebuilt(server, before)

    def test_heal_paused_midway_while_the_slow_move_goes_on(self):
        # The interleaving that lost servers: heal looks at the cell0 row,
        # the move hard-deletes it, heal acts on what it saw. Here heal
        # pauses at its first cell0 call after taking the lease over.
        server = self._buried_with_room()
        before = self._user_fields(server['id'])
        move_hold = _Hold()
        heal_hold = _Hold()
        real_release = cell0_rows.release

        def release(*args, **kwargs):
            heal_hold()
            return real_release(*args, **kwargs)
        with self._inject('nova_cell0_rows.destroy_cell0_instance', move_hold):
            move = self._rebuild_in_background(server['id'])
            move_hold.reached.wait()
            self._expire_move_leases(server['id'])
            self.useFixture(test_move_faults.fixtures.MonkeyPatch(
                RELEASE, release))
            healer = eventlet.spawn(heal.heal, self.admin_context,
                                    self.lease_seconds)
            heal_hold.reached.wait()
            # The move goes on while heal is paused: it must stop.
            move_hold.release.send()
            resp = move.wait()
            heal_hold.release.send()
            healed = healer.wait()
        self.assertEqual(409, resp.status, resp.body)
        self.assertEqual(
            [(server['id'], fields.MoveStep.BUILD_REQUEST_WRITTEN,
              heal.ROLLED_BACK)], healed)
        self._assert_back_in_cell0_then_rebuilt(server, before)


RELEASE = test_move_faults.ADAPTERS + 'nova_cell0_rows.release'


class HealNeedsAuthorizationTest(_LeaseTestBase):
    """Nothing changes before the caller is authorized for the server."""

    def setUp(self):
        super().setUp()
        self._enforce_new_policy_defaults()

    def _interrupted(self):
        """A server whose move died after removing its cell0 rows."""
        server = self._buried_with_room()

        def die():
            raise SimulatedCrash()
        with self._inject('nova_request_specs.complete_request_spec', die):
            self.assertRaises(SimulatedCrash, self._rebuild, server['id'])
        self._expire_move_leases(server['id'])
        return server

    def test_refused_callers_change_nothing(self):
        server = self._interrupted()
        before = self._snapshot(server['id'])
        self.assertEqual(('none', False, True, False), before[0])
        callers = [
            ('other project member', self._client(
                'other', 'other-project', ['member', 'reader']),
             {'imageRef': self.image_id}, 404, 'itemNotFound'),
            ('owner reader', self._client(
                'reader', self.api.project_id, ['reader']),
             {'imageRef': self.image_id}, 403, 'forbidden'),
            ('owner member, bad body', self._client(
                'fake', self.api.project_id, ['member', 'reader']),
             {'imageRef': self.image_id, 'bogus': 1}, 400, 'badRequest'),
        ]
        for name, client, body, status, fault in callers:
            resp = self._rebuild(server['id'], body=body, api=client)
            self.assertEqual(status, resp.status, (name, resp.body))
            self.assertIn(fault, resp.body, name)
            self.assertEqual(before, self._snapshot(server['id']), name)
        # The owner's rebuild heals the move, then rebuilds.
        owner = self._client('fake', self.api.project_id,
                             ['member', 'reader'])
        resp = self._rebuild(server['id'], api=owner)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server['id']))


class HealOneAtATimeTest(_LeaseTestBase):
    """A move heal cannot finish now does not stop it healing the others."""

    def test_a_failing_heal_leaves_the_others_healed(self):
        def die():
            raise SimulatedCrash()
        servers = []
        for _ in range(2):
            server = self._buried_with_room()
            with self._inject('nova_cell0_rows.destroy_cell0_instance', die):
                self.assertRaises(SimulatedCrash, self._rebuild,
                                  server['id'])
            servers.append(server)
        broken, healthy = servers
        real_release = cell0_rows.release

        def release(context, cell0, uuid, task_state):
            if uuid == broken['id']:
                raise RuntimeError('cell0 is down')
            return real_release(context, cell0, uuid, task_state)
        with test_move_faults.fixtures.MonkeyPatch(RELEASE, release):
            healed = dict((uuid, outcome) for uuid, _, outcome in
                          self._heal_after_restart())
        self.assertEqual(heal.ROLLED_BACK, healed[healthy['id']])
        self.assertEqual(heal.FAILED % 'cell0 is down', healed[broken['id']])
        self.assertEqual('cell0', self._assert_exists_once(healthy['id']))
        # Once cell0 answers again, the next heal finishes it.
        self.assertEqual(
            [(broken['id'], fields.MoveStep.BUILD_REQUEST_WRITTEN,
              heal.ROLLED_BACK)], self._heal_after_restart())
        self.assertEqual('cell0', self._assert_exists_once(broken['id']))
