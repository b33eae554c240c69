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

"""CreateRecord on every backend."""

from nova import context as nova_context

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tests.functional.db import base

INSTANCE = '6b1fa6c6-5c3c-4c9a-9a53-2f1b2a7c9e10'
SIBLING = '0f3a1c2b-9d8e-4f7a-8b6c-5d4e3f2a1b0c'


class _CreateRecordTest(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()

    def _record(self, request_id='req-1', **overrides):
        values = dict(
            request_id=request_id,
            status=fields.CreateRecordStatus.PENDING,
            project_id='project', user_id='user', microversion='2.1',
            personality_files=2,
            requested_networks=[{'uuid': INSTANCE, 'tag': 'n\u00e9t'}])
        values.update(overrides)
        record = objects.CreateRecord(self.context, **values)
        record.create()
        return record

    def test_create_accept_and_find(self):
        record = self._record()
        self.assertEqual('pending', record.status)
        record.accept(instance_uuid=INSTANCE, reservation_id='r-abc')
        found = objects.CreateRecord.get_for_instance(self.context, INSTANCE)
        self.assertEqual(record.id, found.id)
        self.assertEqual('accepted', found.status)
        self.assertEqual([{'uuid': INSTANCE, 'tag': 'n\u00e9t'}],
                         found.requested_networks)
        self.assertTrue(found.created_with_personality_files)
        # A sibling of the same multi-create is found by its reservation.
        sibling = objects.CreateRecord.get_for_instance(
            self.context, SIBLING, reservation_id='r-abc')
        self.assertEqual(record.id, sibling.id)

    def test_a_multi_create_names_its_servers(self):
        record = self._record(request_id='req-multi')
        self.assertIsNone(record.server_uuids)
        # A thousand servers: the most a multi-create can ask for here.
        uuids = ['%08d-0000-4000-8000-000000000000' % i for i in range(1000)]
        record.accept(instance_uuid=uuids[0], reservation_id='r-many',
                      server_uuids=reversed(uuids))
        found = objects.CreateRecord.get_by_request_id(self.context,
                                                       'req-multi')
        self.assertEqual(uuids, found.server_uuids)
        # Older plugins (1.1) do not know the field.
        primitive = found.obj_to_primitive(target_version='1.1')
        self.assertNotIn('server_uuids',
                         primitive['nova_cell0_rebuild_object.data'])

    def test_the_wait_opt_in_is_kept_with_the_record(self):
        refusal = 'policy cell0_rebuild:cell0_servers:wait refused: ' + (
            'x' * 1000)
        self._record(request_id='req-wait', wait_deadline='6h')
        self._record(request_id='req-refused', wait_deadline='soon',
                     wait_refusal=refusal)
        self._record(request_id='req-plain')
        found = objects.CreateRecord.get_by_request_id(self.context,
                                                       'req-wait')
        self.assertEqual(('6h', None),
                         (found.wait_deadline, found.wait_refusal))
        found = objects.CreateRecord.get_by_request_id(self.context,
                                                       'req-refused')
        self.assertEqual(('soon', refusal),
                         (found.wait_deadline, found.wait_refusal))
        found = objects.CreateRecord.get_by_request_id(self.context,
                                                       'req-plain')
        self.assertEqual((None, None),
                         (found.wait_deadline, found.wait_refusal))
        # Older plugins (1.2) do not know the fields.
        data = found.obj_to_primitive(target_version='1.2')[
            'nova_cell0_rebuild_object.data']
        self.assertNotIn('wait_deadline', data)
        self.assertNotIn('wait_refusal', data)
        self.assertIn('server_uuids', data)

    def test_found_by_request_id_while_pending(self):
        record = self._record(request_id='req-pending')
        found = objects.CreateRecord.get_for_instance(
            self.context, INSTANCE, reservation_id='r-none',
            request_id='req-pending')
        self.assertEqual(record.id, found.id)

    def test_duplicate_request_id_is_refused(self):
        self._record(request_id='req-dup')
        self.assertRaises(exception.CreateRecordExists,
                          self._record, request_id='req-dup')

    def test_destroy_is_idempotent(self):
        record = self._record()
        record.destroy()
        record.destroy()
        self.assertRaises(exception.CreateRecordNotFound,
                          objects.CreateRecord.get_by_request_id,
                          self.context, 'req-1')

    def test_networks_up_to_the_api_body_limit_fit(self):
        # nova-api accepts bodies up to 114 KiB; all of it may be networks.
        networks = [{'port': INSTANCE, 'tag': 'x' * 60}] * 1100
        self._record(request_id='req-big', requested_networks=networks)
        found = objects.CreateRecord.get_by_request_id(self.context,
                                                       'req-big')
        self.assertEqual(networks, found.requested_networks)

    def test_absent_and_string_networks(self):
        self._record(request_id='req-none', requested_networks=None)
        self._record(request_id='req-auto', requested_networks='auto')
        self.assertIsNone(objects.CreateRecord.get_by_request_id(
            self.context, 'req-none').requested_networks)
        self.assertEqual('auto', objects.CreateRecord.get_by_request_id(
            self.context, 'req-auto').requested_networks)


globals().update(base.backends(_CreateRecordTest))
