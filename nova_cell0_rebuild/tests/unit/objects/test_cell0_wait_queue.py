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

"""The pass's reads of cell0_rebuild_waits, on real rows (SQLite)."""

import datetime

from oslo_context import context as oslo_context
import sqlalchemy as sa

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait_queue as queue
from nova_cell0_rebuild.tests.unit import base

T0 = datetime.datetime(2026, 12, 7, 3, 0, 0)
NOW = T0 + datetime.timedelta(hours=1)


def _uuid(n):
    return '00000000-0000-0000-0000-%012d' % n


class QueueTest(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.context = oslo_context.RequestContext()
        self.serial = 0

    def _wait(self, project, shape, minute, deadline_hours=6,
              next_attempt=None):
        self.serial += 1
        wait = objects.Cell0Wait.open(
            self.context, _uuid(self.serial), project, 'user', 'metadata',
            T0 + datetime.timedelta(minutes=minute),
            T0 + datetime.timedelta(hours=deadline_hours))
        if shape is not None:
            wait.set_shape(shape, now=T0)
        if next_attempt is not None:
            self.assertTrue(wait.dispatch('d', 60, now=T0))
            self.assertTrue(wait.back_off('gate_refused', 'x', next_attempt))
        return wait.instance_uuid

    def test_only_eligible_rows_count(self):
        self._wait('a', 'S', 1)
        self._wait('a', 'S', 2)
        self._wait('b', 'T', 3)
        self._wait('b', None, 4)                       # no shape yet
        self._wait('b', 'T', 5, deadline_hours=1)      # deadline == now
        self._wait('a', 'T', 6, next_attempt=NOW + datetime.timedelta(
            seconds=1))                               # backing off
        self._wait('a', 'T', 7, next_attempt=NOW)      # due
        ended = self._wait('a', 'S', 8)
        objects.Cell0Wait.get_by_instance_uuid(
            self.context, ended).end('cancelled', 'x')
        self.assertEqual({'S': 2, 'T': 2},
                         queue.eligible_shapes(self.context, NOW))
        self.assertEqual({'S': 2, 'T': 1},
                         queue.eligible_shapes(self.context, NOW, ['a']))

    def test_heads_keep_the_oldest_of_each_project_and_shape(self):
        a = [self._wait('a', 'S', m) for m in (5, 1, 3)]
        b = [self._wait('b', 'S', m) for m in (2, 4)]
        t = self._wait('a', 'T', 0)
        self._wait('a', 'U', 0)                        # not asked for
        heads = queue.heads(self.context, NOW, ['S', 'T'], 2)
        self.assertEqual([t, a[1], b[0], a[2], b[1]],
                         [h.instance_uuid for h in heads])
        self.assertEqual([b[0]], [h.instance_uuid for h in queue.heads(
            self.context, NOW, ['S'], 1, ['b'])])
        self.assertEqual([], queue.heads(self.context, NOW, [], 2))

    def test_oldest_of_shapes_and_past_deadline(self):
        s = self._wait('a', 'S', 5)
        self._wait('b', 'S', 6)
        old = self._wait('b', 'T', 1)
        self._wait('a', 'T', 2)
        self._wait('a', 'U', 0)
        late = self._wait('c', 'T', 0, deadline_hours=1)
        self.assertEqual([old, s], [w.instance_uuid for w in
                                    queue.oldest_of_shapes(
                                        self.context, NOW, ['S', 'T'])])
        self.assertEqual([], queue.oldest_of_shapes(self.context, NOW,
                                                    ['S'], ['z']))
        self.assertEqual([late], queue.past_deadline(self.context, NOW, 10))

    def test_note_shape_writes_rows_waiting_for_capacity(self):
        first = self._wait('a', 'S', 1)
        backing_off = self._wait('a', 'S', 2, next_attempt=NOW)
        other = self._wait('a', 'T', 3)
        self.assertEqual(1, queue.note_shape(self.context, 'S',
                                             'no_candidate', 'no room'))
        # Already said: nothing written.
        self.assertEqual(0, queue.note_shape(self.context, 'S',
                                             'no_candidate', 'no room'))
        reasons = {uuid: objects.Cell0Wait.get_by_instance_uuid(
            self.context, uuid).reason_code
            for uuid in (first, backing_off, other)}
        self.assertEqual({first: 'no_candidate',
                          backing_off: 'gate_refused', other: None},
                         reasons)

    def test_statements_do_not_grow_with_rows(self):
        def statements(rows):
            for _ in range(rows):
                self._wait('p%d' % (self.serial % 3), 'S', self.serial)
            count = [0]

            def count_one(*args):
                count[0] += 1
            engine = db_api.get_engine()
            sa.event.listen(engine, 'before_cursor_execute', count_one)
            try:
                queue.eligible_shapes(self.context, NOW)
                queue.heads(self.context, NOW, ['S'], 2)
                queue.oldest_of_shapes(self.context, NOW, ['S'])
                queue.past_deadline(self.context, NOW, 10)
            finally:
                sa.event.remove(engine, 'before_cursor_execute', count_one)
            return count[0]
        few = statements(3)
        self.assertGreater(few, 0)
        self.assertEqual(few, statements(30))
