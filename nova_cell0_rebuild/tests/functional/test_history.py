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

"""A server's history survives its moves out of cell0.

Seen through Nova's own API (os-instance-actions at 2.84, as the owner and
as an admin, and the server's fault) and its cell databases (ec2 ids).

Contexts carry their request's id, as in a real nova-api
(request_ids.RequestIdsAsInNovaApi): Nova's harness would otherwise store
a fresh id of its own as an action's request id, never the
``x-openstack-request-id`` the client was answered.
"""

import fixtures
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects as nova_objects
from nova import utils
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import request_ids
from nova_cell0_rebuild.tests.functional import test_move_faults

EVENT = 'conductor_schedule_and_build_instances'


class _HistoryTestCase(base.Cell0RebuildTestCase):
    """Contexts with their request's id; helpers to read the history."""

    def setUp(self):
        super().setUp()
        self.useFixture(request_ids.RequestIdsAsInNovaApi())
        self.stdlog = self.useFixture(fixtures.FakeLogger(
            name='nova_cell0_rebuild', level='INFO'))

    # Helpers

    def _create(self, **server):
        """POST /servers; returns (server, x-openstack-request-id)."""
        body = self._build_server(image_uuid=self.image_id, networks='none')
        body.update(server)
        resp = self.api.api_post('/servers', {'server': body})
        return resp.body['server'], resp.headers['x-openstack-request-id']

    def _buried(self, **server):
        created, request_id = self._create(**server)
        return self._wait_for_state_change(created, 'ERROR'), request_id

    def _rebuilt(self, server, state='ACTIVE'):
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        # The move answered before the conductor placed the server.
        self.assertEqual('BUILD', resp.body['server']['status'])
        self._wait_for_state_change(server, state)
        return resp.headers['x-openstack-request-id']

    def _actions(self, server_id, api=None):
        api = api or self.admin_api
        with utils.temporary_mutation(api, microversion='2.84'):
            return api.get_instance_actions(server_id)

    def _action(self, server_id, request_id, api=None):
        api = api or self.admin_api
        with utils.temporary_mutation(api, microversion='2.84'):
            return api.get_instance_action_details(server_id, request_id)

    def _cell_engine(self, cell_name):
        cell = (self._cell0() if cell_name == 'cell0'
                else self.cell_mappings[cell_name])
        with nova_context.target_cell(self.admin_context, cell) as cctxt:
            return main_db_api.get_engine(context=cctxt)

    def _ec2_id(self, cell_name, server_id):
        with self._cell_engine(cell_name).connect() as conn:
            return conn.execute(sa.text(
                'SELECT id FROM instance_id_mappings WHERE uuid = :uuid'),
                {'uuid': server_id}).scalar()

    def _faults(self, cell_name, server_id):
        """(code, message, created_at) of the server's faults, by id."""
        with self._cell_engine(cell_name).connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(
                'SELECT code, message, created_at FROM instance_faults '
                'WHERE instance_uuid = :uuid ORDER BY id'),
                {'uuid': server_id})]

    def _summary(self, actions):
        return [(a['action'], a['request_id']) for a in actions]


class HistoryTest(_HistoryTestCase):

    def test_rebuild_keeps_create_history_and_records_rebuild(self):
        server, create_id = self._buried(name='audited')
        before = self._actions(server['id'])
        self.assertEqual([('create', create_id)], self._summary(before))
        created = self._action(server['id'], create_id)
        fault = self.admin_api.get_server(server['id'])['fault']
        cell0_faults = self._faults('cell0', server['id'])
        self._start_compute('host1')

        rebuild_id = self._rebuilt(server)

        for api in (self.api, self.admin_api):
            actions = self._actions(server['id'], api=api)
            self.assertEqual([('rebuild', rebuild_id),
                              ('create', create_id)], self._summary(actions))
            # The original create as it was: user, project, start time.
            self.assertEqual(before[0], actions[1])
        self.assertEqual(created, self._action(server['id'], create_id))
        # Its events: the burial's NoValidHost, details for admins.
        events = created['events']
        self.assertEqual([(EVENT, 'Error')],
                         [(e['event'], e['result']) for e in events])
        self.assertIn('No valid host', events[0]['details'])
        owner_view = self._action(server['id'], create_id, api=self.api)
        self.assertEqual([(EVENT, 'Error')],
                         [(e['event'], e['result'])
                          for e in owner_view['events']])
        self.assertNotIn('details', owner_view['events'][0])
        self.assertEqual(created['start_time'], owner_view['start_time'])
        # The rebuild, by the user who asked for it, with compute's events.
        rebuild = self._action(server['id'], rebuild_id, api=self.api)
        self.assertEqual(('rebuild', created['user_id']),
                         (rebuild['action'], rebuild['user_id']))
        self.assertIn('compute__do_build_and_run_instance',
                      [e['event'] for e in rebuild['events']])
        # The burial's fault is kept, as history, in the server's cell.
        self.assertEqual(cell0_faults, self._faults('cell1', server['id']))
        self.assertIn('No valid host', fault['message'])
        # Moved, not copied: nothing of it is left in cell0.
        self.assertEqual({}, self._cell0_rows(server['id']))

    def test_ec2_id_of_the_cell_it_lands_in(self):
        # The ec2 id a guest reads from the metadata service is never
        # changed under it: the server keeps the one its cell gave it when
        # it landed, whenever its history is written back (issue 25).
        self._start_compute('host1')
        self._set_capacity(False)
        server, _ = self._buried(name='landing')
        self._set_capacity(True)
        self._rebuilt(server)
        landed_with = self._ec2_id('cell1', server['id'])
        self.assertEqual(2, len(self._actions(server['id'])))
        self.assertEqual(landed_with, self._ec2_id('cell1', server['id']))

    def test_reburied_by_conductor_then_rebuilt_keeps_it_all(self):
        server, create_id = self._buried(name='twice')
        ec2 = self._ec2_id('cell0', server['id'])
        created = self._action(server['id'], create_id)

        # No capacity yet: the conductor buries it in cell0 again.
        first_id = self._rebuilt(server, state='ERROR')
        self.assertEqual(self._cell0().uuid,
                         self._mapped_cell_uuid(server['id']))
        actions = self._actions(server['id'])
        self.assertEqual([('rebuild', first_id), ('create', create_id)],
                         self._summary(actions))
        self.assertEqual(created, self._action(server['id'], create_id))
        failed = self._action(server['id'], first_id)
        self.assertEqual([(EVENT, 'Error')],
                         [(e['event'], e['result']) for e in failed['events']])
        self.assertEqual(ec2, self._ec2_id('cell0', server['id']))
        # Both burials' faults, the newest shown with the server.
        faults = self._faults('cell0', server['id'])
        self.assertEqual(2, len(faults))
        self.assertEqual(sorted(faults, key=lambda f: f[2]), faults)

        self._start_compute('host1')
        second_id = self._rebuilt(server)
        self.assertEqual([('rebuild', second_id), ('rebuild', first_id),
                          ('create', create_id)],
                         self._summary(self._actions(server['id'],
                                                     api=self.api)))
        self.assertEqual(created, self._action(server['id'], create_id))
        self.assertEqual(faults, self._faults('cell1', server['id']))
        self.assertEqual({}, self._cell0_rows(server['id']))

    def test_deleted_server_keeps_its_history_until_archive(self):
        server, create_id = self._buried(name='gone')
        self._start_compute('host1')
        rebuild_id = self._rebuilt(server)
        self._delete_server(server)
        with utils.temporary_mutation(self.admin_api, microversion='2.84'):
            actions = self.admin_api.get_instance_actions(server['id'])
        self.assertEqual([('delete', actions[0]['request_id']),
                          ('rebuild', rebuild_id), ('create', create_id)],
                         self._summary(actions))

    def test_write_back_twice_writes_once(self):
        server, create_id = self._buried(name='written-twice')
        cell0 = self._cell0()
        history = nova_instance_history.read(self.admin_context, cell0,
                                             server['id'])
        actions = self._actions(server['id'])
        created = self._action(server['id'], create_id)
        faults = self._faults('cell0', server['id'])
        ec2 = self._ec2_id('cell0', server['id'])
        for _ in range(2):
            # Complete: nothing of it was missing there (a move undone).
            self.assertTrue(nova_instance_history.materialise(
                self.admin_context, cell0, server['id'], history,
                request_id='req-of-a-rebuild-never-cast'))
        self.assertEqual(actions, self._actions(server['id']))
        self.assertEqual(created, self._action(server['id'], create_id))
        self.assertEqual(faults, self._faults('cell0', server['id']))
        self.assertEqual(ec2, self._ec2_id('cell0', server['id']))

    def test_only_action_reads_look_for_a_stash(self):
        server, create_id = self._buried(name='counted')
        statements = []

        def count(conn, cursor, statement, *args):
            if models.ServerHistory.__tablename__ in statement:
                statements.append(statement)
        engine = db_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', count)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        count)
        self.api.get_server(server['id'])
        self.api.get_servers()
        self.api.get_servers(detail=False)
        self.assertEqual([], statements)
        self._actions(server['id'], api=self.api)
        self.assertEqual(1, len(statements))
        self._action(server['id'], create_id, api=self.api)
        self.assertEqual(2, len(statements))
        self.assertTrue(all(s.lstrip().upper().startswith('SELECT')
                            for s in statements), statements)

    def test_purge_never_drops_a_stash_unwritten(self):
        # A stash is forgotten only once written back (issue 25): one of a
        # server with no mapping any more (archived before its history
        # was written back) is kept and reported; one of a server waiting
        # in cell0 is left for its next move.
        server, _ = self._buried(name='kept')
        gone = 'c8b1e9a4-2f3d-4c5b-9a6e-7d8f0a1b2c3d'
        for uuid in (server['id'], gone):
            objects.ServerHistory.stash(
                self.admin_context, uuid, 'fake',
                {'actions': [], 'faults': [], 'ec2_id': None})
        result = purge.purge(self.admin_context)
        self.assertEqual([], result['server_histories'])
        self.assertEqual([gone], result['unmapped_server_histories'])
        for uuid in (server['id'], gone):
            self.assertIsNotNone(objects.ServerHistory.get_by_instance_uuid(
                self.admin_context, uuid))


class ReburialCrashTest(_HistoryTestCase):
    """A crash in the middle of the plugin's own re-burial loses nothing."""

    def test_crash_midway_through_bury_again_then_heal(self):
        server, create_id = self._buried(name='victim', tags=['t1', 't2'])
        before = self.admin_api.get_server(server['id'])
        with utils.temporary_mutation(self.admin_api, microversion='2.84'):
            actions = self.admin_api.get_instance_actions(server['id'])
            created = self.admin_api.get_instance_action_details(
                server['id'], create_id)
        bdms = self._bdms(server['id'])
        ec2 = self._ec2_id('cell0', server['id'])
        self._start_compute('host1')

        # The move fails after the cell0 rows are gone: the task buries
        # the server again, and the process dies while it does.
        def crash(*args, **kwargs):
            raise test_move_faults.SimulatedCrash()
        with fixtures.MockPatch(
                'nova_cell0_rebuild.adapters.nova_request_specs.'
                'complete_request_spec',
                side_effect=RuntimeError('injected')), fixtures.MockPatch(
                    'nova.objects.TagList.create', side_effect=crash):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])

        healed = self._heal_after_restart()
        self.assertEqual([(server['id'], 'cell0_rows_removed',
                           heal.ROLLED_BACK)], healed)
        after = self.admin_api.get_server(server['id'])
        self.assertEqual('ERROR', after['status'])
        self.assertEqual(['t1', 't2'], sorted(after['tags']))
        # The fault it was buried with, Nova's details included.
        self.assertEqual(before['fault'], after['fault'])
        self.assertEqual(bdms, self._bdms(server['id']))
        self.assertEqual(ec2, self._ec2_id('cell0', server['id']))
        with utils.temporary_mutation(self.admin_api, microversion='2.84'):
            self.assertEqual(actions, self.admin_api.get_instance_actions(
                server['id']))
            self.assertEqual(created,
                             self.admin_api.get_instance_action_details(
                                 server['id'], create_id))

        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(['t1', 't2'],
                         sorted(self.api.get_server(server['id'])['tags']))
        with utils.temporary_mutation(self.api, microversion='2.84'):
            listed = self.api.get_instance_actions(server['id'])
        self.assertEqual(
            [('rebuild', resp.headers['x-openstack-request-id']),
             ('create', create_id)],
            [(a['action'], a['request_id']) for a in listed])

    def _bdms(self, server_id):
        mapping = nova_objects.InstanceMapping.get_by_instance_uuid(
            self.admin_context, server_id)
        with nova_context.target_cell(self.admin_context,
                                      mapping.cell_mapping) as cctxt:
            return sorted(
                (b.source_type, b.destination_type, b.boot_index, b.image_id)
                for b in nova_objects.BlockDeviceMappingList.
                get_by_instance_uuid(cctxt, server_id))
