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

"""Every server shape lands, rebuilt from cell0, as if created with room.

Each test creates a shape while the cloud has no room (Nova buries it in
cell0), makes room, creates its twin directly, rebuilds the buried one with
its own image, and compares the two field by field (twins.Snapshot): only
identity and time may differ.
"""

import copy

from nova import utils
from oslo_utils import uuidutils

from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import twins


class ShapeTestCase(base.Cell0RebuildTestCase):

    #: The computes started once the buried twin is in cell0. With more
    #: than one, which host each twin lands on is not compared.
    hosts = ('host1',)

    def _twin_port(self, port):
        """A copy of a Neutron fixture port for one twin, with its own id.

        Same network, MAC and fixed IPs: the fixture does not check them,
        and equal addresses let the twins' network info be compared.
        """
        twin = copy.deepcopy(port)
        twin['id'] = uuidutils.generate_uuid()
        self.neutron._ports[twin['id']] = twin
        return twin

    def _body(self, shape):
        shape = dict(shape)
        body = self._build_server(
            name='twin', image_uuid=shape.pop('imageRef', self.image_id),
            networks=shape.pop('networks', 'none'))
        body.update(shape)
        return body

    def _post(self, body, api, microversion):
        with utils.temporary_mutation(api, microversion=microversion):
            return api.post_server({'server': body})

    def _assert_lands_as_created(self, shape, rebuild=None, api=None,
                                 microversion='latest'):
        """Bury a server of *shape*, rebuild it, compare it with its twin.

        :param shape: a create body, or a callable returning one for
            'buried' and for 'created' (for what one server alone may use,
            such as a port).
        :param rebuild: the rebuild body; by default the shape's image.
        :returns: (rebuilt, created) snapshots, for further checks.
        """
        api = api or self.api
        body_of = shape if callable(shape) else (lambda twin: shape)
        buried = self._wait_for_state_change(
            self._post(self._body(body_of('buried')), api, microversion),
            'ERROR')
        self.assertIn('No valid host', buried['fault']['message'])
        for host in self.hosts:
            self._start_compute(host)
        created_body = self._body(body_of('created'))
        created = self._wait_for_state_change(
            self._post(created_body, api, microversion), 'ACTIVE')
        rebuild = rebuild or {'imageRef': created_body['imageRef']}
        resp = self._rebuild(buried['id'], rebuild, api=api)
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(buried, 'ACTIVE')

        rebuilt_snapshot = twins.Snapshot(self, buried['id'])
        created_snapshot = twins.Snapshot(self, created['id'])
        host_names = self.hosts if len(self.hosts) > 1 else ()
        expected = created_snapshot.sections(host_names)
        actual = rebuilt_snapshot.sections(host_names)
        if host_names:
            for sections in (expected, actual):
                sections['server'].pop('hostId')
        lines = twins.differences(expected, actual)
        self.assertEqual([], lines, '\n' + '\n'.join(lines))
        return rebuilt_snapshot, created_snapshot


class ImageServerShapeTest(ShapeTestCase):

    def test_image_backed(self):
        self._assert_lands_as_created({})


class VolumeBackedShapeTest(ShapeTestCase):

    def test_boot_from_a_volume_created_from_an_image(self):
        # The most common boot from volume: Nova's compute creates the
        # volume from the image, so a buried server has no volume yet.
        rebuilt, created = self._assert_lands_as_created(
            {'imageRef': '', 'block_device_mapping_v2': [{
                'boot_index': 0, 'uuid': self.image_id,
                'source_type': 'image', 'destination_type': 'volume',
                'volume_size': 1, 'delete_on_termination': True}]},
            rebuild={'imageRef': self.image_id})
        root, = rebuilt.bdms
        self.assertIsNotNone(root.volume_id)
        self.assertIn(root.volume_id, self.cinder.volumes)
        self.assertEqual(self.image_id, root.image_id)
        self.assertEqual('', rebuilt.view['image'])
