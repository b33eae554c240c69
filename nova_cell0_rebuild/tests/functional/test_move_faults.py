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

"""Crashes and errors at every step of a move out of cell0.

At each boundary between two steps of the move the test either raises an
error (the task rolls back) or simulates the process dying (nothing rolls
back; ``heal`` runs as after a restart); deletes are in test_delete_races.
After each, the server must exist exactly once with a mapping that agrees,
and nothing the user supplied may be lost: it is rebuilt again and compared.
"""

import base64
import pkgutil

import fixtures
from nova import context as nova_context
from nova import objects as nova_objects
from testtools import content

from nova_cell0_rebuild.adapters import nova_build_requests
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import base

#: The package of the move's adapters: a step of the move is hooked as
#: ``module.function`` in it.
ADAPTERS = 'nova_cell0_rebuild.adapters.'

#: Each boundary, named for the last step journaled before it, and the
#: adapter function the move calls first after it (or, for "journal:",
#: the journal step whose recording fails).
BOUNDARIES = [
    ('claimed', 'nova_build_requests.new_build_request'),
    ('build_request_written', 'nova_cell0_rows.destroy_cell0_instance'),
    # The cell0 rows are gone but the journal still says
    # build_request_written: the undo must see that the rows are gone.
    ('rows gone, unrecorded', 'journal:cell0_rows_removed'),
    ('cell0_rows_removed', 'nova_request_specs.complete_request_spec'),
    ('casting', 'nova_build_requests.schedule_and_build'),
]

#: What heal does after a process died at each boundary. At the last one
#: the cast was attempted: neither the task nor heal undoes the move.
HEALED = {
    'claimed': heal.ROLLED_BACK,
    'build_request_written': heal.ROLLED_BACK,
    'rows gone, unrecorded': heal.ROLLED_BACK,
    'cell0_rows_removed': heal.ROLLED_BACK,
    'casting': heal.LEFT_ALONE,
}

#: The journal step the heal report shows for each boundary.
JOURNALED = dict((boundary, boundary) for boundary, _ in BOUNDARIES)
JOURNALED['rows gone, unrecorded'] = 'build_request_written'


class SimulatedCrash(BaseException):
    """The process dies: no except clause of the plugin catches it."""


class MoveChecks(object):
    """Where a server is during a move, what its user sees, and hooks."""

    def _where(self, server_id):
        """(mapped cell name, cell0 row?, BuildRequest?, cell1 row?)."""
        mapping = nova_servers.get_mapping(self.admin_context, server_id)
        if mapping is None or mapping.queued_for_delete:
            mapped = 'deleted'
        elif mapping.cell_mapping is None:
            mapped = 'none'
        else:
            mapped = mapping.cell_mapping.name
        cell0 = nova_servers.get_cell0_instance(
            self.admin_context, self._cell0(), server_id) is not None
        br = nova_build_requests.build_request_pending(
            self.admin_context, server_id) is not None
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings['cell1']) as cctxt:
            try:
                nova_objects.Instance.get_by_uuid(cctxt, server_id)
                cell1 = True
            except Exception:
                cell1 = False
        return mapped, cell0, br, cell1

    def _assert_exists_once(self, server_id):
        mapped, cell0, br, cell1 = self._where(server_id)
        self.assertEqual(1, [cell0, br, cell1].count(True),
                         (mapped, cell0, br, cell1))
        expected = {'cell0': cell0, 'none': br, 'cell1': cell1}
        self.assertTrue(expected[mapped], (mapped, cell0, br, cell1))
        return mapped

    def _user_fields(self, server_id):
        server = self.admin_api.get_server(server_id)
        return {key: server[key] for key in (
            'id', 'name', 'metadata', 'tags', 'key_name', 'description',
            'created', 'OS-EXT-SRV-ATTR:user_data',
            'OS-EXT-SRV-ATTR:hostname', 'OS-EXT-SRV-ATTR:reservation_id')}

    def _journal_rows(self):
        with db_api.reader(self.admin_context) as session:
            return session.query(models.MoveJournal).count()

    def _inject(self, function, effect):
        """Run *effect* when the move reaches *function* (a context).

        *function* names an adapter function as ``module.function``
        (effect before it runs), ``after:<module.function>`` (effect once
        it returned), ``journal:<step>`` (before the journal records
        *step*) or ``journal:finish`` (before the journal records the move
        as done).
        """
        if function == 'journal:finish':
            real_finish = move_journal.MoveJournal.finish

            def finish(journal, status, **kwargs):
                if status == move_journal.Status.DONE:
                    effect()
                return real_finish(journal, status, **kwargs)
            return fixtures.MonkeyPatch(
                'nova_cell0_rebuild.objects.move_journal.MoveJournal.'
                'finish', finish)
        if function.startswith('after:'):
            name = function.split(':', 1)[1]
            real_call = pkgutil.resolve_name(ADAPTERS + name)

            def after(*args, **kwargs):
                result = real_call(*args, **kwargs)
                effect()
                return result
            return fixtures.MockPatch(ADAPTERS + name, side_effect=after)
        if function.startswith('journal:'):
            step = function.split(':', 1)[1]
            real_advance = move_journal.MoveJournal.advance

            def advance(journal, to):
                if to == step:
                    effect()
                return real_advance(journal, to)
            return fixtures.MonkeyPatch(
                'nova_cell0_rebuild.objects.move_journal.MoveJournal.'
                'advance', advance)
        real = pkgutil.resolve_name(ADAPTERS + function)

        def hook(*args, **kwargs):
            effect()
            return real(*args, **kwargs)
        return fixtures.MockPatch(ADAPTERS + function, side_effect=hook)

    def _buried(self):
        return self._create_buried_server(
            name='victim', metadata={'k': 'v'}, tags=['t1'],
            description='d', hostname='victim-host',
            user_data=base64.b64encode(b'data').decode())


class MoveFaultsTest(MoveChecks, base.Cell0RebuildTestCase):

    def _fail_at(self, boundary, function, outcome):
        """Inject a fault at one boundary; returns how it ended."""
        self._set_capacity(False)
        server = self._buried()
        self._set_capacity(True)
        before = self._user_fields(server['id'])

        def effect():
            if outcome == 'raise':
                raise RuntimeError('injected after %s' % boundary)
            raise SimulatedCrash()

        with self._inject(function, effect):
            if outcome == 'raise':
                resp = self._rebuild(server['id'])
                self.assertEqual(500, resp.status, resp.body)
            else:
                self.assertRaises(SimulatedCrash, self._rebuild,
                                  server['id'])
        if outcome == 'raise' and HEALED[boundary] == heal.LEFT_ALONE:
            # The cast raised: it may have gone out, so it is not undone.
            ended = 'not undone: the cast may have been sent'
        elif outcome == 'raise':
            ended = 'rolled back by the task'
        else:
            # The process restarts: heal, twice.
            healed = self._heal_after_restart()
            self.assertEqual(
                [(server['id'], JOURNALED[boundary], HEALED[boundary])],
                healed)
            again = self._heal_after_restart()
            self.assertEqual(
                healed if HEALED[boundary] == heal.LEFT_ALONE else [],
                again)
            ended = 'heal: ' + HEALED[boundary]

        mapped = self._assert_exists_once(server['id'])
        if HEALED[boundary] == heal.LEFT_ALONE:
            # The conductor may still get the cast: it stays a
            # BuildRequest (status BUILD) that the user can delete.
            self.assertEqual('none', mapped)
            self._delete_server(server)
            self.assertEqual('deleted', self._where(server['id'])[0])
            return ended + '; deleted by the user'
        self.assertEqual('cell0', mapped)
        self.assertEqual('ERROR',
                         self.admin_api.get_server(server['id'])['status'])
        self.assertEqual(before, self._user_fields(server['id']))
        # Nothing the user asked for was lost: it is rebuilt again.
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('cell1', self._assert_exists_once(server['id']))
        self.assertEqual(before, self._user_fields(server['id']))
        return ended + '; rebuilt again: ACTIVE, same fields'

    def _report(self, rows):
        table = '\n'.join('%-22s %-6s %s' % row for row in rows)
        table = 'step boundary          fault  outcome\n' + table
        print('\n' + table)
        self.addDetail('matrix', content.text_content(table))

    def test_raise_at_every_step(self):
        self._report([(b, 'raise', self._fail_at(b, f, 'raise'))
                      for b, f in BOUNDARIES])

    def test_process_dies_at_every_step_then_heal(self):
        self._report([(b, 'die', self._fail_at(b, f, 'die'))
                      for b, f in BOUNDARIES])

    def test_hard_delete_only_under_the_claim(self):
        # Something clears the claim after the move wrote the BuildRequest:
        # the cell0 rows are not deleted, the move is undone.
        self._set_capacity(False)
        server = self._buried()
        self._set_capacity(True)
        before = self._user_fields(server['id'])
        rows = self._cell0_rows(server['id'])

        def clear_claim():
            with nova_context.target_cell(self.admin_context,
                                          self._cell0()) as cctxt:
                instance = nova_objects.Instance.get_by_uuid(
                    cctxt, server['id'])
                instance.task_state = None
                instance.save()

        with self._inject('nova_cell0_rows.destroy_cell0_instance',
                          clear_claim):
            resp = self._rebuild(server['id'])
        self.assertEqual(409, resp.status, resp.body)
        self.assertEqual('cell0', self._assert_exists_once(server['id']))
        self.assertEqual(rows, self._cell0_rows(server['id']))
        self.assertEqual(before, self._user_fields(server['id']))
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(before, self._user_fields(server['id']))
