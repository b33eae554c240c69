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

"""Purge on real Nova: it never forgets a server that can still be rebuilt.

A create record whose completion never ran (a nova-api worker recycled or
a database blip right after Nova's 202) stays ``pending``; the gates find
it by the request id of the server's ``create`` action. Purge must not
take that away from a server still in cell0.
"""

import datetime

import fixtures
from nova.db.api import api as api_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import purge as purge_ops
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import request_ids


class PurgeTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        # A create action carries its request's id, as in nova-api.
        self.useFixture(request_ids.RequestIdsAsInNovaApi())

    def _records(self):
        with db_api.reader(self.admin_context) as session:
            return sorted((r.status, r.instance_uuid, r.reservation_id)
                          for r in session.query(models.CreateRecord))

    def _break_accept(self):
        """The UPDATE that completes a record fails (a DB blip)."""
        def broken(context, record_id, values):
            raise db_exc.DBConnectionError('the create records DB blipped')
        return fixtures.MockPatchObject(objects.CreateRecord,
                                        '_update_in_db', side_effect=broken)

    def _age_records(self, hours=2):
        """Make every create record look last written *hours* ago."""
        then = timeutils.utcnow() - datetime.timedelta(hours=hours)
        with db_api.writer(self.admin_context) as session:
            # Both columns: an UPDATE would set updated_at to now.
            session.query(models.CreateRecord).update(
                {'created_at': then, 'updated_at': then},
                synchronize_session=False)

    def _age_build_requests(self, hours=2):
        """Make Nova's BuildRequests look written *hours* ago."""
        then = timeutils.utcnow() - datetime.timedelta(hours=hours)
        with api_db_api.context_manager.writer.using(
                self.admin_context) as session:
            session.execute(sa.text(
                'UPDATE build_requests SET created_at = :then'),
                {'then': then})

    def _buried_with_pending_record(self, **server):
        with self._break_accept():
            buried = self._create_buried_server(**server)
        self.assertEqual([('pending', None, None)], self._records())
        self._age_records()
        return buried

    def test_pending_record_of_a_buried_server_survives_purge(self):
        server = self._buried_with_pending_record()
        result = purge_ops.purge(self.admin_context)
        self.assertEqual([], result['create_records'])
        # Purge completed it from the server it found in cell0.
        self.assertEqual([('accepted', server['id'], None)], self._records())
        self._start_compute('host1')
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_pending_record_of_buried_siblings_is_completed(self):
        first = self._buried_with_pending_record(min_count=2, max_count=2)
        reservation_id = first['OS-EXT-SRV-ATTR:reservation_id']
        siblings = self.api.get_servers(
            search_opts={'reservation_id': reservation_id})
        for sibling in siblings:
            self._wait_for_state_change(sibling, 'ERROR')
        result = purge_ops.purge(self.admin_context, dry_run=True)
        self.assertEqual(([], 1), (result['create_records'],
                                   len(result['accepted_create_records'])))
        # A dry run changes nothing.
        self.assertEqual([('pending', None, None)], self._records())
        purge_ops.purge(self.admin_context)
        (status, instance_uuid, reservation), = self._records()
        self.assertEqual(('accepted', reservation_id),
                         (status, reservation))
        self.assertIn(instance_uuid, [s['id'] for s in siblings])
        for sibling in siblings:
            record = objects.CreateRecord.get_for_instance(
                self.admin_context, sibling['id'],
                reservation_id=reservation_id)
            self.assertEqual('accepted', record.status)

    def test_pending_record_within_the_grace_is_kept(self):
        with self._break_accept():
            self._create_buried_server()
        result = purge_ops.purge(self.admin_context)
        self.assertEqual(([], []), (result['create_records'],
                                    result['accepted_create_records']))
        self.assertEqual([('pending', None, None)], self._records())

    def test_pending_record_of_a_server_still_building_is_kept(self):
        # The conductor never got the cast: the server waits in a
        # BuildRequest, which knows nothing of the request id.
        self.useFixture(fixtures.MockPatch(
            'nova.conductor.api.ComputeTaskAPI.schedule_and_build_instances'))
        with self._break_accept():
            server = self.api.post_server({'server': self._build_server(
                image_uuid=self.image_id, networks='none')})
        # A conductor hours behind.
        self._age_records()
        self._age_build_requests()
        result = purge_ops.purge(self.admin_context)
        self.assertEqual([], result['create_records'])
        self.assertEqual([('pending', None, None)], self._records())
        # Another project's BuildRequest is no reason to keep it.
        with api_db_api.context_manager.writer.using(
                self.admin_context) as session:
            session.execute(sa.text(
                "UPDATE build_requests SET project_id = 'elsewhere' "
                "WHERE instance_uuid = :uuid"), {'uuid': server['id']})
        result = purge_ops.purge(self.admin_context)
        self.assertEqual(1, len(result['create_records']))
        self.assertEqual([], self._records())

    def test_pending_record_of_no_server_is_deleted(self):
        self._pending_record_of_a_deleted_server()
        (request_id,) = [r.request_id for r in objects.CreateRecord.list_page(
            self.admin_context)]
        result = purge_ops.purge(self.admin_context)
        self.assertEqual([request_id], result['create_records'])
        self.assertEqual([], self._records())

    def test_record_of_a_buried_server_is_kept(self):
        server = self._create_buried_server()
        self._age_records()
        result = purge_ops.purge(self.admin_context)
        self.assertEqual([], result['create_records'])
        self.assertEqual([('accepted', server['id'], None)], self._records())

    def test_record_of_a_landed_server_is_purged(self):
        self._start_compute('host1')
        server = self._wait_for_state_change(
            self.api.post_server({'server': self._build_server(
                image_uuid=self.image_id, networks='none')}), 'ACTIVE')
        # Settled in the request: nothing deletes it in the background.
        self.assertEqual([('accepted', server['id'], None)], self._records())
        result = purge_ops.purge(self.admin_context)
        self.assertEqual(1, len(result['create_records']))
        self.assertEqual([], self._records())
        self.assertEqual([], purge_ops.purge(
            self.admin_context)['create_records'])

    def _meanwhile(self, name, change):
        """Run *change* right after purge's look-up *name* answered."""
        real = getattr(nova_servers, name)

        def looked_up(*args, **kwargs):
            answer = real(*args, **kwargs)
            change()
            return answer
        self.useFixture(fixtures.MockPatchObject(nova_servers, name,
                                                 side_effect=looked_up))

    def _write_records(self, **values):
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).update(
                values, synchronize_session=False)

    def _after_records_read(self, change):
        """Run *change* right after purge read a page of create records."""
        real = objects.CreateRecord.list_page

        def read(*args, **kwargs):
            page = real(*args, **kwargs)
            change()
            return page
        self.useFixture(fixtures.MockPatchObject(
            objects.CreateRecord, 'list_page', side_effect=read))

    def _pending_record_of_a_deleted_server(self):
        with self._break_accept():
            server = self._create_buried_server()
        self._delete_server(server)
        self._age_records()
        return server

    def test_a_record_removed_meanwhile_is_not_reported(self):
        self._pending_record_of_a_deleted_server()

        def delete_records():
            with db_api.writer(self.admin_context) as session:
                session.query(models.CreateRecord).delete()
        self._after_records_read(delete_records)
        self.assertEqual([], purge_ops.purge(
            self.admin_context)['create_records'])

    def test_a_record_completed_meanwhile_is_kept(self):
        server = self._pending_record_of_a_deleted_server()
        # The create's own nova-api completes it after all.
        self._after_records_read(lambda: self._write_records(
            status='accepted', instance_uuid=server['id'],
            updated_at=timeutils.utcnow()))
        self.assertEqual([], purge_ops.purge(
            self.admin_context)['create_records'])
        self.assertEqual([('accepted', server['id'], None)], self._records())

    def test_a_journal_restarted_meanwhile_is_kept(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._wait_for_state_change(server, 'ACTIVE')

        def restart_move():
            with db_api.writer(self.admin_context) as session:
                session.query(models.MoveJournal).update(
                    {'status': 'in_progress',
                     'attempts': models.MoveJournal.attempts + 1},
                    synchronize_session=False)
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).delete()
        # Purge looks where the server is, then a new move starts.
        self._meanwhile('still_in_cell0_or_building', restart_move)
        self.assertEqual([], purge_ops.purge(
            self.admin_context)['move_journal'])
        with db_api.reader(self.admin_context) as session:
            self.assertEqual(['in_progress'], [
                j.status for j in session.query(models.MoveJournal)])
