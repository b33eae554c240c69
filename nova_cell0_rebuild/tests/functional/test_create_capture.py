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

"""The create flow on real Nova: what the filter records for each create."""

import base64

import fixtures
from nova.tests.functional.api import client as api_client
from nova import utils
from oslo_db import exception as db_exc
import webob.dec

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests import microversions as mv

MARKER = 'created_with_personality_files'


def _personality(count):
    return [{'path': '/etc/file%d' % i,
             'contents': base64.b64encode(b'content %d' % i).decode()}
            for i in range(count)]


class CreateCaptureTest(base.Cell0RebuildTestCase):

    def _networks(self):
        return [{'uuid': self.neutron.network_1['id']}]

    def _post(self, microversion, **extra):
        server = self._build_server(networks=self._networks())
        server.update(extra)
        with utils.temporary_mutation(self.api, microversion=microversion):
            return self.api.post_server({'server': server})

    def _record(self, server_id):
        instance = self._cell0_instance(server_id)
        return objects.CreateRecord.get_for_instance(
            self.admin_context, server_id,
            reservation_id=instance.reservation_id)

    def _all_records(self):
        with db_api.reader(self.admin_context) as session:
            return session.query(models.CreateRecord).all()

    def test_personality_create_buried_in_cell0_is_recorded(self):
        server = self._post('2.1', personality=_personality(2))
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(
            '00000000-0000-0000-0000-000000000000',
            self._mapped_cell_uuid(server['id']))

        record = self._record(server['id'])
        self.assertEqual(2, record.personality_files)
        self.assertTrue(record.created_with_personality_files)
        self.assertEqual(self._networks(), record.requested_networks)
        self.assertEqual('2.1', record.microversion)
        self.assertEqual(self.api.project_id, record.project_id)
        self.assertEqual(self.api.auth_user, record.user_id)
        self.assertEqual('accepted', record.status)
        self.assertEqual(server['id'], record.instance_uuid)
        # One server: it is found by its uuid; only a multi-create's record
        # carries the reservation its siblings share.
        self.assertIsNone(record.reservation_id)
        # Settled when the 202 went out; nothing is written after it (the
        # marker comes with the first refusal of a rebuild).
        self.assertNotIn(MARKER,
                         self._cell0_instance(server['id']).system_metadata)

    def test_create_without_personality_records_zero_and_no_marker(self):
        server = self._post('2.57')
        server = self._wait_for_state_change(server, 'ERROR')
        record = self._record(server['id'])
        self.assertEqual(0, record.personality_files)
        self.assertFalse(record.created_with_personality_files)
        self.assertEqual(self._networks(), record.requested_networks)
        self.assertEqual('2.57', record.microversion)
        self.assertNotIn(MARKER, self._cell0_instance(
            server['id']).system_metadata)

    def test_latest_microversion_is_recorded_as_a_number(self):
        server = self._wait_for_state_change(self._post('latest'), 'ERROR')
        self.assertEqual(mv.NOVA_MAX, self._record(server['id']).microversion)

    def test_networks_none_and_auto_are_recorded_as_given(self):
        for networks in ('none', 'auto'):
            server = self._build_server(networks=networks)
            server = self.api.post_server({'server': server})
            server = self._wait_for_state_change(server, 'ERROR')
            self.assertEqual(networks,
                             self._record(server['id']).requested_networks)

    def test_create_without_networks_records_none(self):
        server = self._build_server()
        with utils.temporary_mutation(self.api, microversion='2.1'):
            server = self.api.post_server({'server': server})
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIsNone(self._record(server['id']).requested_networks)

    def test_rejected_create_leaves_no_record(self):
        server = self._build_server(networks=self._networks())
        server['flavorRef'] = 'no-such-flavor'
        ex = self.assertRaises(api_client.OpenStackApiException,
                               self.api.post_server, {'server': server})
        self.assertEqual(400, ex.response.status_code)
        self.assertEqual([], self._all_records())

    def _rejected_create(self):
        server = self._build_server(networks=self._networks())
        server['flavorRef'] = 'no-such-flavor'
        return self.api.api_post('/servers', {'server': server},
                                 check_response_status=False)

    def test_nova_refusal_reaches_the_client_when_the_record_db_blips(self):
        plain = self._rejected_create()
        self.assertEqual([], self._all_records())

        def broken(context, record_id):
            raise db_exc.DBConnectionError('the create records DB blipped')
        self.useFixture(fixtures.MockPatchObject(
            objects.CreateRecord, '_destroy_in_db', side_effect=broken))
        blipped = self._rejected_create()
        self.assertEqual((400, plain.body), (blipped.status, blipped.body))
        self.assertIn('Could not delete the create record of request',
                      self.stdlog.logger.output)
        # Left pending, naming no server: purge removes it after the grace.
        self.assertEqual([('pending', None)],
                         [(r.status, r.instance_uuid)
                          for r in self._all_records()])

    def test_create_without_request_id_is_logged(self):
        @webob.dec.wsgify
        def no_request_id(middleware, req):
            return req.get_response(middleware.application)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.compute_req_id.ComputeReqIdMiddleware.__call__',
            no_request_id))
        server = self._post('2.1')
        self._wait_for_state_change(server, 'ERROR')
        self.assertEqual([], self._all_records())
        self.assertIn('passes to Nova unrecorded: no openstack.request_id',
                      self.stdlog.logger.output)

    def test_personality_at_2_57_is_rejected_by_nova_and_not_recorded(self):
        ex = self.assertRaises(api_client.OpenStackApiException,
                               self._post, '2.57',
                               personality=_personality(1))
        self.assertEqual(400, ex.response.status_code)
        self.assertEqual([], self._all_records())

    def test_multi_create_siblings_share_the_record(self):
        server = self._post('2.1', personality=_personality(1),
                            min_count=3, max_count=3)
        self._wait_for_state_change(server, 'ERROR')
        record = self._record(server['id'])
        siblings = self.api.get_servers(
            search_opts={'reservation_id': record.reservation_id})
        self.assertEqual(3, len(siblings))
        for sibling in siblings:
            self._wait_for_state_change(sibling, 'ERROR')
            self.assertEqual(record.id, self._record(sibling['id']).id)
        self.assertEqual(1, len(self._all_records()))
        self.assertEqual(1, record.personality_files)

    def test_return_reservation_id_is_recorded(self):
        with utils.temporary_mutation(self.api, microversion='2.1'):
            body = self._build_server(networks=self._networks())
            body.update(min_count=2, max_count=2,
                        return_reservation_id=True)
            resp = self.api.api_post('/servers', {'server': body}).body
        reservation_id = resp['reservation_id']
        siblings = self.api.get_servers(
            search_opts={'reservation_id': reservation_id})
        self.assertEqual(2, len(siblings))
        records = self._all_records()
        self.assertEqual(1, len(records))
        self.assertEqual(reservation_id, records[0].reservation_id)
        self.assertIsNone(records[0].instance_uuid)
        for sibling in siblings:
            self._wait_for_state_change(sibling, 'ERROR')
            self.assertEqual(records[0].id, self._record(sibling['id']).id)

    def test_record_not_found_for_unknown_instance(self):
        self.assertRaises(exception.CreateRecordNotFound,
                          objects.CreateRecord.get_for_instance,
                          self.admin_context,
                          '9d2f4c3e-0b1a-4c5d-8e7f-6a5b4c3d2e1f')
