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

"""The personality refusal holds from the create record alone.

The ``created_with_personality_files`` marker is written on the cell0
instance by the ``personality`` gate when it first refuses the server (no
background work writes it after the burial). Until it lands, and when it
cannot be written at all, the record decides.
"""

import base64

import fixtures
from oslo_db import exception as db_exc

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import request_ids

MARKER = 'created_with_personality_files'


class PersonalityWindowTest(base.Cell0RebuildTestCase):

    def setUp(self):
        super().setUp()
        # A create action carries its request's id, as in nova-api.
        self.useFixture(request_ids.RequestIdsAsInNovaApi())
        self.write_marker = nova_servers.set_cell_system_metadata
        self.marker_writes = self.useFixture(fixtures.MockPatchObject(
            nova_servers, 'set_cell_system_metadata',
            side_effect=self.write_marker)).mock

    def _buried_with_personality(self):
        server = self._create_buried_server(
            microversion='2.1',
            networks=[{'uuid': self.neutron.network_1['id']}],
            personality=[{
                'path': '/etc/motd',
                'contents': base64.b64encode(b'hello').decode()}])
        self.assertNotIn(MARKER, self._sysmeta(server))
        self._start_compute('host1')
        return server

    def _sysmeta(self, server):
        return self._cell0_instance(server['id']).system_metadata

    def _assert_refused(self, server):
        resp = self._rebuild(server['id'])
        self.assertEqual(409, resp.status, resp.body)
        self.assertIn('created with personality files',
                      resp.body['conflictingRequest']['message'])
        self.assertEqual(nova_servers.CELL0_UUID,
                         self._mapped_cell_uuid(server['id']))

    def test_refused_while_the_marker_cannot_be_written(self):
        server = self._buried_with_personality()
        rows = self._cell0_rows(server['id'])
        self.marker_writes.side_effect = db_exc.DBConnectionError('cell0')
        self._assert_refused(server)
        self.assertIn('Could not mark instance %s' % server['id'],
                      self.stdlog.logger.output)
        self.assertNotIn(MARKER, self._sysmeta(server))
        self.assertEqual(rows, self._cell0_rows(server['id']))
        # Once cell0 answers, the next refusal writes it, once.
        self.marker_writes.side_effect = self.write_marker
        self.marker_writes.reset_mock()
        self._assert_refused(server)
        self._assert_refused(server)
        self.assertEqual(1, self.marker_writes.call_count)
        self.assertEqual('True', self._sysmeta(server)[MARKER])

    def test_refused_from_a_record_left_pending(self):
        # The UPDATE after Nova's 202 failed: the record names no server
        # and is found by the request id of the create action only.
        with fixtures.MockPatchObject(
                objects.CreateRecord, '_update_in_db',
                side_effect=db_exc.DBConnectionError('blip')):
            server = self._buried_with_personality()
        with db_api.reader(self.admin_context) as session:
            self.assertEqual([('pending', None)], [
                (r.status, r.instance_uuid)
                for r in session.query(models.CreateRecord)])
        self._assert_refused(server)
        self.assertEqual('True', self._sysmeta(server)[MARKER])

    def test_refused_from_the_marker_alone(self):
        server = self._buried_with_personality()
        self._assert_refused(server)
        # The record is gone (an operator removed it): the marker, written
        # by the first refusal, still refuses with allow_unrecorded.
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).delete()
        self.flags(allow_unrecorded=True, group='cell0_rebuild')
        self._assert_refused(server)
