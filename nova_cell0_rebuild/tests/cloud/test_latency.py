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

"""Latency of a rebuild from cell0 against a create, on MariaDB.

Not a target, a measurement: printed, and written as JSON to
``$CLOUD_LATENCY_OUTPUT`` (``tox -e cloud`` puts it next to the bench's
results). Each round runs both side by side on the same cloud, three
pre-emptibles running: the rebuild of a buried server into the free slot,
then a create into the same slot.
"""

import json
import statistics
import sys
import time

from nova_cell0_rebuild.tests.cloud import base
from nova_cell0_rebuild.tests.cloud import clients

ROUNDS = 3


class LatencyTest(base.CloudTestCase):

    def _to_active(self, uuid, posted):
        self.wait_for_status(uuid, 'ACTIVE')
        return time.monotonic() - posted

    def _round(self):
        uuid, preemptibles = self.full_cloud_with_a_buried_server()
        self.delete(preemptibles[0])
        posted = time.monotonic()
        status, answer, rebuild_post = self.cloud.compute(
            'demo-member', 'POST', '/servers/%s/action' % uuid,
            self.rebuild_body())
        self.assertEqual(202, status, answer)
        rebuild_active = self._to_active(uuid, posted)
        self.delete(uuid)
        posted = time.monotonic()
        created, create_post = self.create('reference')
        create_active = self._to_active(created, posted)
        self._delete_all_servers()
        return {'create_post': create_post, 'rebuild_post': rebuild_post,
                'create_to_active': create_active,
                'rebuild_to_active': rebuild_active}

    def test_rebuild_against_create(self):
        rounds = [self._round() for _ in range(ROUNDS)]
        medians = {key: round(statistics.median(r[key] for r in rounds), 3)
                   for key in rounds[0]}
        result = {
            'database': 'MariaDB', 'rounds': rounds, 'medians_s': medians,
            'ratios': {
                'rebuild_post/create_post': round(
                    medians['rebuild_post'] / medians['create_post'], 2),
                'rebuild_to_active/create_to_active': round(
                    medians['rebuild_to_active']
                    / medians['create_to_active'], 2)},
        }
        sys.stdout.write('\n' + json.dumps(result, indent=2) + '\n')
        for key, value in result.items():
            clients.record_result([key], value)
        for value in medians.values():
            self.assertGreater(value, 0)
