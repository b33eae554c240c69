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

"""nova-cell0-rebuild-manage against the harness's real databases."""

import base64
import io
import json
import sys

import fixtures
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.main import api as main_db_api
from nova.tests.functional.api import client as api_client
from oslo_utils import uuidutils
import sqlalchemy as sa
from testtools import content

from nova_cell0_rebuild.cmd import manage
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import gates
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.tests.bench import sql
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults


class ManageTest(test_move_faults.MoveChecks, base.Cell0RebuildTestCase):

    def _manage(self, command, **kwargs):
        out = io.StringIO()
        code = getattr(manage.Cell0Commands(self.admin_context, out),
                       command)(**kwargs)
        return code, out.getvalue()

    def _manage_with_stderr(self, command, **kwargs):
        err = self.useFixture(fixtures.MonkeyPatch('sys.stderr',
                                                   io.StringIO())).new_value
        code, out = self._manage(command, **kwargs)
        return code, out, err.getvalue()

    def _other_project_api(self):
        return api_client.TestOpenStackClient(
            'other-user', self.api.base_url, project_id='other-project',
            roles=['reader', 'member'])

    def _three_buried(self):
        ok = self._create_buried_server(name='ok')
        personality = self._create_buried_server(
            name='files', microversion='2.1',
            networks=[{'uuid': self.neutron.network_1['id']}],
            personality=[{'path': '/f', 'contents': base64.b64encode(
                b'x').decode()}])
        other = self._create_buried_server(name='other',
                                           api=self._other_project_api())
        with db_api.writer(self.admin_context) as session:
            session.query(models.CreateRecord).filter_by(
                instance_uuid=other['id']).delete()
        return ok, personality, other

    def test_list_show_and_verdicts(self):
        ok, personality, other = self._three_buried()
        code, out = self._manage('list', format='json')
        self.assertEqual(0, code)
        listed = {e['uuid']: e for e in json.loads(out)}
        self.assertEqual({ok['id'], personality['id'], other['id']},
                         set(listed))
        self.assertEqual((True, None),
                         (listed[ok['id']]['rebuildable'],
                          listed[ok['id']]['refused_by']))
        self.assertEqual('personality',
                         listed[personality['id']]['refused_by'])
        self.assertEqual('record', listed[other['id']]['refused_by'])
        self.assertEqual('other-project', listed[other['id']]['project_id'])
        self.assertIn('No valid host', listed[ok['id']]['fault'])
        # Listing wrote nothing: the personality marker is the filter's.
        code, out = self._manage('list', rebuildable='no',
                                 project=self.api.project_id)
        self.assertIn(personality['id'], out)
        self.assertNotIn('created_with_personality_files',
                         self._cell0_instance(
                             personality['id']).system_metadata)
        self.assertNotIn(ok['id'], out)
        self.assertNotIn(other['id'], out)

        # Paging: one server a page, resuming after the last one shown.
        seen = []
        marker = None
        for _ in range(4):
            code, out = self._manage('list', format='json', page_size=1,
                                     pages=1, marker=marker)
            page = json.loads(out)
            if not page:
                break
            seen.extend(e['uuid'] for e in page)
            marker = page[-1]['uuid']
        self.assertEqual(sorted(listed), sorted(seen))
        self.assertEqual(3, len(seen))

        code, out = self._manage('show', uuid=ok['id'])
        shown = json.loads(out)
        self.assertEqual('cell0', shown['mapped_to'])
        self.assertEqual(ok['id'], shown['create_record']['instance_uuid'])
        self.assertIsNone(shown['move_journal'])
        self.assertEqual(['allowed'] * 6,
                         [v for _, v in shown['cell0']['verdicts']])

    def test_heal_and_purge(self):
        server = self._create_buried_server()
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._wait_for_state_change(server, 'ACTIVE')
        code, out = self._manage('show', uuid=server['id'])
        shown = json.loads(out)
        self.assertEqual('cell1', shown['mapped_to'])
        self.assertEqual(('done', 'cast_sent', 1),
                         tuple(shown['move_journal'][k] for k in
                               ('status', 'step', 'attempts')))
        # Nothing was interrupted: heal has nothing to do.
        code, out = self._manage('heal', older_than=0)
        self.assertEqual(0, code)
        self.assertNotIn(server['id'], out)
        # The record of a server that landed is left to purge: nothing
        # runs after a request to delete it, so nothing is racing here.
        # Every kind of row it deletes is counted and listed, the history
        # the move stashed (written back into cell1 first) included.
        self.assertIsNotNone(objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, server['id']))
        listed = ['  create record %s' % self._request_id_of(server['id']),
                  '  move journal of %s' % server['id'],
                  '  server history of %s (written back, or kept with the '
                  'deleted server in cell0)' % server['id']]
        # --before holds back every kind alike.
        for dry_run in (True, False):
            code, out = self._manage('purge', dry_run=dry_run, before='1h')
            self.assertEqual('%s 0 create records, 0 move journal rows, 0 '
                             'server history rows and 0 relay '
                             'announcements.\n'
                             % ('Would delete' if dry_run else 'Deleted'),
                             out)
        self.assertIsNotNone(objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, server['id']))
        code, out = self._manage('purge', dry_run=True)
        self.assertEqual(['Would delete 1 create records, 1 move journal '
                          'rows, 1 server history rows and 0 relay '
                          'announcements.'] + listed,
                         out.splitlines())
        self.assertIsNotNone(objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, server['id']))
        code, out = self._manage('purge')
        self.assertEqual(['Deleted 1 create records, 1 move journal rows, '
                          '1 server history rows and 0 relay '
                          'announcements.'] + listed,
                         out.splitlines())
        self.assertIsNone(objects.ServerHistory.get_by_instance_uuid(
            self.admin_context, server['id']))
        code, out = self._manage('purge')
        self.assertEqual('Deleted 0 create records, 0 move journal rows, 0 '
                         'server history rows and 0 relay announcements.\n',
                         out)

    def _request_id_of(self, server_id):
        with db_api.reader(self.admin_context) as session:
            return session.query(models.CreateRecord).filter_by(
                instance_uuid=server_id).one().request_id

    def _listed(self, server_id):
        code, out = self._manage('list', format='json')
        self.assertEqual(0, code)
        return {e['uuid']: e for e in json.loads(out)}[server_id]

    def test_list_a_move_interrupted_after_its_claim(self):
        server = self._create_buried_server()

        def die():
            raise test_move_faults.SimulatedCrash()
        with self._inject('nova_build_requests.new_build_request', die):
            self.assertRaises(test_move_faults.SimulatedCrash,
                              self._rebuild, server['id'])
        # Its lease holds: a move is under way, as a rebuild would answer.
        listed = self._listed(server['id'])
        self.assertEqual((False, 'state', False),
                         (listed['rebuildable'], listed['refused_by'],
                          listed['interrupted_move']))
        self.assertEqual(409, self._rebuild(server['id']).status)
        # Once it ran out, a rebuild heals the move first: rebuildable.
        self._expire_move_leases(server['id'])
        listed = self._listed(server['id'])
        self.assertEqual((True, None, True),
                         (listed['rebuildable'], listed['refused_by'],
                          listed['interrupted_move']))
        self.assertEqual(['allowed'] * 6,
                         [v for _, v in listed['verdicts']])
        # Listing changed nothing; the rebuild it announces succeeds.
        self.assertEqual('rebuilding',
                         self._cell0_instance(server['id']).task_state)
        self._start_compute('host1')
        self.assertEqual(202, self._rebuild(server['id']).status)
        self._wait_for_state_change(server, 'ACTIVE')

    def test_rebuild_as_an_operator(self):
        ok, personality, other = self._three_buried()
        self._start_compute('host1')
        code, out = self._manage('rebuild', uuid=personality['id'])
        self.assertEqual(manage.ATTENTION, code)
        self.assertIn('Refused (409)', out)
        self.assertIn('personality files', out)
        code, out = self._manage('rebuild', uuid=ok['id'])
        self.assertEqual(manage.SUCCESS, code, out)
        self.assertIn(self.image_id, out)
        active = self._wait_for_state_change(ok, 'ACTIVE')
        self.assertEqual(ok['id'], active['id'])
        code, out = self._manage('rebuild', uuid=ok['id'])
        self.assertEqual(manage.ATTENTION, code)
        self.assertIn('not in cell0', out)

    def test_an_unknown_server_is_not_found(self):
        unknown = uuidutils.generate_uuid()
        for command in ('rebuild', 'show'):
            code, out, err = self._manage_with_stderr(command, uuid=unknown)
            self.assertEqual(4, code, (command, out, err))
            self.assertEqual('', out, command)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn('%s not found' % unknown, err)
            self.assertNotIn('not in cell0', err)

    def test_a_deleted_server_is_not_found_by_rebuild(self):
        server = self._create_buried_server()
        self.api.delete_server(server['id'])
        self._wait_until_deleted(server)
        code, out, err = self._manage_with_stderr('rebuild',
                                                  uuid=server['id'])
        self.assertEqual(4, code, (out, err))
        self.assertIn('%s not found' % server['id'], err)


class ListScalesTest(base.Cell0RebuildTestCase):
    """list issues as many statements a page for 10 or 1,000 servers."""

    def _bury(self, count):
        self._bury_directly(count)

    def _statements_for_a_page(self):
        with nova_context.target_cell(self.admin_context,
                                      self._cell0()) as cctxt:
            engines = {main_db_api.get_engine(context=cctxt),
                       api_db_api.get_engine(), db_api.get_engine()}
        count = [0]

        def counter(*args, **kwargs):
            # Nova's services heartbeat and run periodic tasks meanwhile:
            # only what the listing issues counts.
            if sql.origin(sys._getframe(1)) == sql.API:
                count[0] += 1
        for engine in engines:
            sa.event.listen(engine, 'before_cursor_execute', counter)
        try:
            entries, marker = inventory.cell0_page(
                self.admin_context, gates.load_gates(manage.CONF), limit=10)
        finally:
            for engine in engines:
                sa.event.remove(engine, 'before_cursor_execute', counter)
        self.assertEqual(10, len(entries))
        return count[0]

    def test_statements_flat_as_cell0_grows(self):
        self._bury(10)
        small = self._statements_for_a_page()
        self._bury(990)
        large = self._statements_for_a_page()
        self.addDetail('statements', content.text_content(
            'SQL statements for a page of 10: %d with 10 servers in cell0, '
            '%d with 1000' % (small, large)))
        self.assertEqual(small, large)
