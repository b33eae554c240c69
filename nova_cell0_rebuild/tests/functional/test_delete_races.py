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

"""A DELETE racing every step of a move out of cell0, then Nova's archive.

The bar is what Nova leaves when it deletes a server that is being
scheduled, once ``nova-manage db archive_deleted_rows`` ran: no mapping,
no RequestSpec, no BuildRequest, no server-group membership, no
allocation, no instance row (live or soft-deleted) in any cell, and
nothing of ours (journal, create record). Before the cast the move meets
the delete itself; after it, Nova's conductor does (held here with
explicit signals, as Nova's own regression tests hold it, to land the
DELETE at each point).
"""

import datetime
import io
import threading
import types

import fixtures
from nova.cmd import manage
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.main import api as main_db_api
from oslo_serialization import jsonutils
from oslo_utils import importutils
from oslo_utils import timeutils
import sqlalchemy as sa
from testtools import content

from nova_cell0_rebuild.adapters import nova_build_requests
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import fixture as plugin_fixture
from nova_cell0_rebuild.operations import purge
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults

BUILD_REQUESTS = 'nova_cell0_rebuild.adapters.nova_build_requests.'
CONDUCTOR = 'nova.conductor.manager.ComputeTaskManager.'

#: How long a test waits for a signal before it fails (never a sleep).
SIGNAL_TIMEOUT = 30

#: Each boundary before the cast, named for the last step journaled
#: before it, and the adapter function the move calls first after it
#: (or, for "journal:", the journal step whose recording comes next).
BEFORE_THE_CAST = [
    ('claimed', 'nova_build_requests.new_build_request'),
    ('build_request_written', 'nova_cell0_rows.destroy_cell0_instance'),
    ('rows gone, unrecorded', 'journal:cell0_rows_removed'),
    ('cell0_rows_removed', 'nova_request_specs.complete_request_spec'),
    # The last check: a DELETE after it meets the conductor's check.
    ('before the cast', 'nova_build_requests.still_pending'),
]

#: The API-database tables that name a server, by their column.
_API_TABLES = (
    ('instance_mappings', 'instance_uuid'),
    ('request_specs', 'instance_uuid'),
    ('build_requests', 'instance_uuid'),
    ('instance_group_member', 'instance_uuid'),
)

#: Nova's fault keys for the answers a rebuild that lost the race gives.
_FAULT_KEYS = {404: 'itemNotFound', 409: 'conflictingRequest'}
_LOST = ['%s %s' % item for item in _FAULT_KEYS.items()]


class _Call(threading.Thread):
    """A call made in a thread of its own; wait() returns its result.

    threading, not eventlet: this module also runs in Nova's native-thread
    mode (tox -e functional-threading), where eventlet must not be
    imported; under eventlet's patching the thread is a green one.
    """

    def __init__(self, function, *args, **kwargs):
        super().__init__(daemon=True)
        self._call = (function, args, kwargs)
        self._result = None
        self._error = None
        self.start()

    def run(self):
        function, args, kwargs = self._call
        try:
            self._result = function(*args, **kwargs)
        except Exception as error:
            self._error = error

    def wait(self):
        self.join(SIGNAL_TIMEOUT)
        if self.is_alive():
            raise AssertionError('%s did not return' % (self._call[0],))
        if self._error is not None:
            raise self._error
        return self._result


class SimulatedCrash(BaseException):
    """The process dies: no except clause of the plugin catches it."""


class Hold(fixtures.Fixture):
    """Stop a Nova method until released, as Nova's regression tests do.

    :param target: dotted path of the method.
    :param after: hold once the method returned (its effect is done),
        rather than before it runs.
    :ivar reached: set when a call is held.
    :ivar done: set when the held call returned or raised.
    """

    def __init__(self, target, after=False):
        super().__init__()
        self.target = target
        self.after = after
        self.reached = threading.Event()
        self.released = threading.Event()
        self.done = threading.Event()

    def _setUp(self):
        owner, name = self.target.rsplit('.', 1)
        real = getattr(importutils.import_class(owner), name)

        def held(*args, **kwargs):
            try:
                if self.after:
                    result = real(*args, **kwargs)
                self.reached.set()
                self.released.wait(SIGNAL_TIMEOUT)
                if not self.after:
                    result = real(*args, **kwargs)
                return result
            finally:
                self.done.set()
        self.useFixture(fixtures.MonkeyPatch(self.target, held))
        # Never leave a Nova service blocked behind a failed test.
        self.addCleanup(self.released.set)

    def wait_reached(self, test):
        test.assertTrue(self.reached.wait(SIGNAL_TIMEOUT), self.target)

    def release_and_wait(self, test):
        self.released.set()
        test.assertTrue(self.done.wait(SIGNAL_TIMEOUT), self.target)


#: [cell0_rebuild] hand_off_timeout of these tests (the default).
HAND_OFF_TIMEOUT = 3600


def heal_later(context, lease_seconds, later=0):
    """Heal, with hand-offs, as if it ran *later* seconds from now.

    Only heal's own clock (which dates its cutoff) moves: Nova's services
    keep reporting on the real one (a heartbeat dated an hour ahead would
    make the compute look down once the clock is back).
    """
    clock = types.SimpleNamespace(
        utcnow=lambda: timeutils.utcnow() + datetime.timedelta(
            seconds=later))
    with fixtures.MonkeyPatch('nova_cell0_rebuild.tasks.heal.timeutils',
                              clock):
        return heal.heal(context, lease_seconds,
                         hand_off_timeout=HAND_OFF_TIMEOUT)


class DeleteRacesTestBase(base.Cell0RebuildTestCase):
    """What a server deleted mid-flight leaves, after Nova's archive."""

    def _assert_nothing_left_once_heal_ran(self, servers):
        """After the heal past the hand-off timeout and archive, nothing of
        any of *servers* {boundary: id}, deleted once their cast may have
        been sent.

        Their DELETE keeps the hand-off's journal, marked, and that heal
        releases what the conductor may hold in placement (it releases a
        claim on finding the BuildRequest gone, unless it drops the
        hand-off first), then removes it.
        """
        for server_id in servers.values():
            self.assertEqual(['journal row'], self._ours(server_id))
        results = heal_later(self.admin_context, self.lease_seconds,
                             later=HAND_OFF_TIMEOUT + 1)
        self.assertEqual(
            sorted((server_id, heal.CLAIM_RELEASED)
                   for server_id in servers.values()),
            sorted((uuid, outcome) for uuid, _step, outcome in results))
        self._assert_nothing_left(servers)

    def _grouped_server_body(self, **server):
        """A create body in a server group of its own, on port_1."""
        group = self.api.post_server_groups(
            {'name': 'g', 'policy': 'anti-affinity'})
        body = self._build_server(
            image_uuid=self.image_id,
            networks=[{'port': self.neutron.port_1['id']}])
        body.update(server)
        return {'server': body, 'os:scheduler_hints': {'group': group['id']}}

    def _create_grouped_buried_server(self):
        created = self.api.post_server(self._grouped_server_body())
        return self._wait_for_state_change(created, 'ERROR')

    def _delete(self, server_id):
        """DELETE a server as its user; Nova answers 204."""
        resp = self.api.api_delete('/servers/%s' % server_id,
                                   check_response_status=False)
        self.assertEqual(204, resp.status, resp.body)

    @staticmethod
    def _answer(resp):
        """How a rebuild answered, e.g. "404 itemNotFound" for Nova's JSON.
        """
        if 'application/json' not in resp.headers.get('content-type', ''):
            return '%s %s' % (resp.status, resp.headers.get('content-type'))
        body = jsonutils.loads(resp.content)
        key = _FAULT_KEYS.get(resp.status)
        if (list(body) != [key] or body[key].get('code') != resp.status or
                not isinstance(body[key].get('message'), str)):
            return '%s %s' % (resp.status, body)
        return '%s %s' % (resp.status, key)

    def _archive(self):
        """Nova's ``nova-manage db archive_deleted_rows --all-cells``."""
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        manage.DbCommands().archive_deleted_rows(
            max_rows=1000, until_complete=True, all_cells=True)

    @staticmethod
    def _count(engine, table, column, server_id):
        """Rows of *table* naming the server, deleted or not."""
        with engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT COUNT(*) FROM %s WHERE %s = :uuid' % (table, column)),
                {'uuid': server_id}).scalar()

    def _leftovers(self, server_id):
        """Everything left of a deleted server, named; [] if nothing."""
        found = ['API_DB.' + table for table, column in _API_TABLES
                 if self._count(api_db_api.get_engine(), table, column,
                                server_id)]
        for name in ('cell0', 'cell1'):
            with nova_context.target_cell(
                    self.admin_context, self.cell_mappings[name]) as cctxt:
                engine = main_db_api.get_engine(context=cctxt)
            if self._count(engine, 'instances', 'uuid', server_id):
                found.append('%s.instances (live or soft-deleted)' % name)
        allocations = self.placement.get(
            '/allocations/%s' % server_id).body['allocations']
        if allocations:
            found.append('placement allocations')
        found.extend(self._ours(server_id))
        port = self.neutron.show_port(self.neutron.port_1['id'])['port']
        if port['device_id']:
            found.append('bound port')
        return found

    def _ours(self, server_id):
        found = []
        with db_api.reader(self.admin_context) as session:
            if session.query(models.MoveJournal).filter_by(
                    instance_uuid=server_id).count():
                found.append('journal row')
            if session.query(models.CreateRecord).count():
                found.append('create record')
        return found

    def _report(self, rows):
        table = '\n'.join('%-26s %s' % row for row in rows)
        table = 'delete lands at            rebuild answered\n' + table
        print('\n' + table)
        self.addDetail('matrix', content.text_content(table))

    def _assert_nothing_left(self, servers):
        """Archive, then nothing of any of *servers* {boundary: id}."""
        self._archive()
        left = {boundary: self._leftovers(server_id)
                for boundary, server_id in servers.items()}
        self.assertEqual({boundary: [] for boundary in servers}, left)


class DeleteRacesMoveTest(DeleteRacesTestBase):
    """A DELETE at every step of a move wins; after archive nothing is left.
    """

    def _inject_once(self, function, effect):
        """Run *effect* once, when the move reaches *function*."""
        fired = []

        def once():
            if not fired:
                fired.append(True)
                effect()
        return test_move_faults.MoveChecks._inject(self, function, once)

    def test_delete_at_every_step_before_the_cast(self):
        built = self._record_casts()
        servers = {}
        answers = {}
        for boundary, function in BEFORE_THE_CAST:
            server = self._create_grouped_buried_server()
            servers[boundary] = server['id']
            with self._inject_once(function, lambda: self._delete(
                    server['id'])):
                answers[boundary] = self._answer(self._rebuild(server['id']))
            self._wait_until_deleted(server)
        self._report(answers.items())
        # The conductor was asked to build each server once, for its
        # create, and never again for a server deleted while it moved.
        self.assertEqual(list(servers.values()), built)
        self._assert_nothing_left(servers)
        # The rebuild lost the race: gone or conflicting, in Nova's JSON,
        # never an error of ours.
        for boundary, answer in answers.items():
            self.assertIn(answer, _LOST, boundary)

    def _die_at(self, function):
        """A buried server whose move died when it reached *function*."""
        server = self._create_grouped_buried_server()

        def crash():
            raise SimulatedCrash()
        with self._inject_once(function, crash):
            self.assertRaises(SimulatedCrash, self._rebuild, server['id'])
        return server

    def test_process_dies_before_the_cast_then_delete(self):
        # The move stopped for good before its cast: the DELETE removes
        # what the move would have removed had it met the delete itself.
        built = self._record_casts()
        servers = {}
        for boundary, function in BEFORE_THE_CAST:
            server = self._die_at(function)
            servers[boundary] = server['id']
            self._delete(server['id'])
            self._wait_until_deleted(server)
        self.assertEqual(list(servers.values()), built)
        self._assert_nothing_left(servers)

    def test_process_dies_before_the_cast_delete_then_heal(self):
        # The DELETE could not forget the move (its journal stays): heal
        # removes what the move would have.
        server = self._die_at('nova_request_specs.complete_request_spec')
        with fixtures.MockPatch(
                'nova_cell0_rebuild.api.record_keeping.forget_deleted',
                side_effect=RuntimeError('the plugin database is down')):
            self._delete(server['id'])
        self.assertEqual(
            [(server['id'], 'cell0_rows_removed', heal.DELETED)],
            self._heal_after_restart())
        self._archive()
        # The create record is purge's (test_manage).
        self.assertEqual(['create record'], self._leftovers(server['id']))

    def _buried_with_capacity(self):
        """A buried server, then a compute it can be scheduled to."""
        self._set_capacity(False)
        server = self._create_grouped_buried_server()
        self._set_capacity(True)
        return server

    def test_delete_after_the_cast_before_the_conductor(self):
        # The cast returned, the move has not recorded it yet; the
        # conductor got the request and has not scheduled it.
        server = self._buried_with_capacity()
        conductor = self.useFixture(Hold(CONDUCTOR + '_schedule_instances'))
        real_cast = nova_build_requests.schedule_and_build

        def cast_then_delete(*args, **kwargs):
            real_cast(*args, **kwargs)
            self._delete(server['id'])
        with fixtures.MockPatch(BUILD_REQUESTS + 'schedule_and_build',
                                side_effect=cast_then_delete):
            resp = self._rebuild(server['id'])
        conductor.wait_reached(self)
        conductor.release_and_wait(self)
        self.assertIn(self._answer(resp), _LOST)
        self._assert_nothing_left_once_heal_ran({'cast sent': server['id']})

    def test_delete_after_the_answer_before_the_conductor(self):
        server = self._buried_with_capacity()
        conductor = self.useFixture(Hold(CONDUCTOR + '_schedule_instances'))
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        conductor.wait_reached(self)
        self._delete(server['id'])
        conductor.release_and_wait(self)
        self._assert_nothing_left_once_heal_ran(
            {'cast answered': server['id']})

    def test_delete_while_the_conductor_schedules(self):
        # The scheduler chose a host and claimed its allocation; the
        # conductor has not yet looked for the BuildRequest.
        server = self._buried_with_capacity()
        scheduled = self.useFixture(
            Hold(CONDUCTOR + '_schedule_instances', after=True))
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        scheduled.wait_reached(self)
        self.assertTrue(self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'])
        self._delete(server['id'])
        scheduled.release_and_wait(self)
        self._assert_nothing_left_once_heal_ran(
            {'conductor scheduling': server['id']})

    def test_delete_read_in_cell0_while_the_move_lands(self):
        # Nova's API read the server in cell0 and is about to delete what
        # it read; meanwhile the move lands it in cell1 (found by the
        # interleaving explorer: rebuild_a,delete). Nova then deletes a
        # cell0 instance that is not there and answers 204: the DELETE
        # must still delete the server where it now is.
        server = self._buried_with_capacity()
        nova_delete = self.useFixture(Hold('nova.compute.api.API.delete'))
        deleting = _Call(
            self.api.api_delete, '/servers/%s' % server['id'],
            check_response_status=False)
        nova_delete.wait_reached(self)
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        self._wait_for_state_change(server, 'ACTIVE')
        self.notifier.reset()
        nova_delete.release_and_wait(self)
        self.assertEqual(204, deleting.wait().status)
        self.notifier.wait_for_versioned_notifications('instance.delete.end')
        self.api.api_get('/servers/%s' % server['id'],
                         check_response_status=[404])
        purge.purge(self.admin_context)
        self._assert_nothing_left({'landing': server['id']})

    def test_delete_read_in_cell0_while_the_move_holds_a_build_request(self):
        # Nova's API read the server in cell0; the move then removed its
        # cell0 rows and holds it as a build request, not yet cast (found
        # by the explorer: rebuild_a,delete). Nova deletes the cell0
        # instance it read, answers 204: the DELETE must still delete the
        # server, and the move must not cast it.
        server = self._buried_with_capacity()
        nova_delete = self.useFixture(Hold('nova.compute.api.API.delete'))
        pending = self.useFixture(Hold(
            'nova_cell0_rebuild.adapters.nova_build_requests.still_pending'))
        casts = self._record_casts()
        deleting = _Call(
            self.api.api_delete, '/servers/%s' % server['id'],
            check_response_status=False)
        nova_delete.wait_reached(self)
        moving = _Call(self._rebuild, server['id'])
        pending.wait_reached(self)
        nova_delete.release_and_wait(self)
        self.assertEqual(204, deleting.wait().status)
        pending.release_and_wait(self)
        self.assertEqual(404, moving.wait().status)
        self.assertEqual([], casts)
        self.api.api_get('/servers/%s' % server['id'],
                         check_response_status=[404])
        self._assert_nothing_left({'build request': server['id']})

    def test_delete_while_compute_builds(self):
        server = self._buried_with_capacity()
        spawn = self.useFixture(Hold('nova.virt.fake.FakeDriver.spawn'))
        resp = self._rebuild(server['id'])
        self.assertEqual(202, resp.status, resp.body)
        spawn.wait_reached(self)
        self.notifier.reset()
        self._delete(server['id'])
        spawn.release_and_wait(self)
        # The compute deletes it once the build let go of the server.
        self.notifier.wait_for_versioned_notifications('instance.delete.end')
        # A server in a real cell is no concern of the filter's DELETE (one
        # look-up, issue 17): its finished journal and its record are
        # purge's, as for any server that landed.
        self._archive()
        self.assertEqual(['journal row', 'create record'],
                         self._leftovers(server['id']))
        purge.purge(self.admin_context)
        self._assert_nothing_left({'compute building': server['id']})


class DeleteRacesCreateTest(DeleteRacesTestBase):
    """Nova's own create racing a DELETE, with the filter in nova-api.

    The filter leaves a create to Nova, but the window is the same as after
    a move's cast, and so is the bar.
    """

    def test_delete_while_the_conductor_schedules(self):
        self._start_compute('host1')
        scheduled = self.useFixture(
            Hold(CONDUCTOR + '_schedule_instances', after=True))
        server = self.api.post_server(self._grouped_server_body())
        scheduled.wait_reached(self)
        self._delete(server['id'])
        scheduled.release_and_wait(self)
        self._assert_nothing_left({'create scheduling': server['id']})


class NovaAloneDeleteRacesCreateTest(DeleteRacesTestBase):
    """What Nova alone (no filter) leaves of a create racing a DELETE.

    The baseline the plugin is measured against, and a known gap of Nova
    34: when the conductor finds the BuildRequest deleted it destroys the
    mapping and the allocation but not the RequestSpec nor the group
    membership, and with no instance row archive never removes them. If
    this fails, Nova fixed it: the filter's clean-up in its DELETE path
    may then go.
    """

    def setUp(self):
        # Nova's own pipeline (our tables exist, the filter is not in it).
        directory = self.useFixture(fixtures.TempDir()).path
        nova_pipeline = plugin_fixture.write_paste_config_without_filter(
            directory)
        self.useFixture(fixtures.MonkeyPatch(
            plugin_fixture.__name__ + '.find_paste_config',
            lambda: nova_pipeline))
        super().setUp()

    def test_delete_while_the_conductor_schedules(self):
        self._start_compute('host1')
        scheduled = self.useFixture(
            Hold(CONDUCTOR + '_schedule_instances', after=True))
        server = self.api.post_server(self._grouped_server_body())
        scheduled.wait_reached(self)
        self._delete(server['id'])
        scheduled.release_and_wait(self)
        self._archive()
        self.assertEqual(
            ['API_DB.request_specs', 'API_DB.instance_group_member'],
            self._leftovers(server['id']))
