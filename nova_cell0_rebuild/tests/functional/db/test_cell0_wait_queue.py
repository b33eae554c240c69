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

"""The pass's reads (a GROUP BY, a ROW_NUMBER window, note_shape's UPDATE)
on SQLite, MySQL/MariaDB and PostgreSQL: the window function's syntax and
the DATETIME comparisons are the backend's.
"""

import datetime

from nova import context as nova_context

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait_queue as queue
from nova_cell0_rebuild.tests.functional.db import base

T0 = datetime.datetime(2026, 12, 7, 3, 0, 0)
NOW = T0 + datetime.timedelta(hours=1)


def _uuid(n):
    return '00000000-0000-0000-0000-%012d' % n


class _QueueTest(object):

    def setUp(self):
        super().setUp()
        objects.register_all()
        migration.db_sync(self.engine)
        self.context = nova_context.get_admin_context()
        self.serial = 0

    def _wait(self, project, shape, minute, deadline_hours=6):
        self.serial += 1
        wait = objects.Cell0Wait.open(
            self.context, _uuid(self.serial), project, 'user', 'metadata',
            T0 + datetime.timedelta(minutes=minute),
            T0 + datetime.timedelta(hours=deadline_hours))
        wait.set_shape(shape, now=T0)
        return wait.instance_uuid

    def test_a_pass_reads_the_oldest_of_each_project_and_shape(self):
        a = [self._wait('a', 'S', m) for m in (5, 1, 3)]
        b = [self._wait('b', 'S', m) for m in (2, 4)]
        t = self._wait('a', 'T', 0)
        late = self._wait('b', 'T', 0, deadline_hours=1)
        self.assertEqual({'S': 5, 'T': 1},
                         queue.eligible_shapes(self.context, NOW))
        heads = queue.heads(self.context, NOW, ['S', 'T'], 2)
        self.assertEqual([t, a[1], b[0], a[2], b[1]],
                         [h.instance_uuid for h in heads])
        self.assertEqual([t, a[1]], [w.instance_uuid for w in
                                     queue.oldest_of_shapes(
                                         self.context, NOW, ['S', 'T'])])
        self.assertEqual([late], queue.past_deadline(self.context, NOW, 5))
        self.assertEqual(5, queue.note_shape(self.context, 'S',
                                             'no_candidate', 'none'))
        self.assertEqual(0, queue.note_shape(self.context, 'S',
                                             'no_candidate', 'none'))


globals().update(base.backends(_QueueTest))
