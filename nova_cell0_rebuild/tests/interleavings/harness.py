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

"""Real Nova 34 for the explorer: one buried server, reset per schedule.

The world is set up once per test: Nova's API (twice: two WSGI apps, as
two nova-api processes, each with the filter through the public fixture),
scheduler, conductor, one compute with the fake driver, RPC casts made
calls (so the conductor's ``schedule_and_build_instances`` runs while the
casting actor waits, at a step point of its own), and one server buried in
cell0 by a create that found no room. Its databases (API, cell0, cell1,
placement; all in-memory SQLite) are then copied; each schedule starts
from that copy (SQLite's online backup, milliseconds) with the lease clock
frozen at a fixed time that only the actors move. In the pending
service's world (``World.pending``) the server also waits for room before
the copy is taken (pending_actors.open_wait).
"""

import datetime
import json
import os
import sqlite3
import time

import fixtures as fixtures_lib
from nova.api.openstack import wsgi_app
from nova.api import wsgi
from nova.conductor import manager as conductor_manager
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.main import api as main_db_api
from nova.objects import host_mapping
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client
from oslo_config import cfg
from oslo_utils import timeutils
from placement import db_api as placement_db_api
import sqlalchemy as sa
from testtools import content
from wsgi_intercept import interceptor

from nova_cell0_rebuild.tests import explorer
from nova_cell0_rebuild.tests.functional import base
from nova_cell0_rebuild.tests.functional import test_move_faults
from nova_cell0_rebuild.tests.interleavings import actors
from nova_cell0_rebuild.tests.interleavings import invariants
from nova_cell0_rebuild.tests.interleavings import pending_actors
from nova_cell0_rebuild.tests.interleavings import reflect_once
from nova_cell0_rebuild.tests.interleavings import step_points

#: The second API app's host name in wsgi-intercept.
SECOND_API_HOST = 'osapi-b.explorer'

_WRITES = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')


class Snapshot(object):
    """In-memory SQLite databases, copied once and restored at will."""

    def __init__(self, engines):
        self.engines = engines
        self.copies = {}

    @staticmethod
    def _copy(engine, target=None, restored_check=None):
        raw = engine.raw_connection()
        try:
            source = raw.driver_connection
            if target is None:
                copy = sqlite3.connect(':memory:', check_same_thread=False)
                source.backup(copy)
                return copy
            target.backup(source)
            if restored_check:
                restored_check(source)
        finally:
            raw.close()

    def take(self):
        for name, engine in self.engines.items():
            self.copies[name] = self._copy(engine)

    def restore(self):
        for name, engine in self.engines.items():
            self._copy(engine, self.copies[name])


class HandOffDropped(Exception):
    """The conductor lost its database after its scheduler claimed."""


class DroppedHandOffs(fixtures_lib.Fixture):
    """Nova's conductor drops a hand-off when the world says so.

    Once ``world.drop_next_hand_off`` is set, the next build's scheduling
    claims its allocation and the conductor then fails before it writes
    the instance in a cell, as when its database fails over (the Galera
    cloud job, tests/functional/test_dropped_hand_off.py). Casts are made
    calls here: the failure is swallowed where the conductor's RPC server
    would log it, so the caster sees what a real cast gives it, nothing.
    """

    _MANAGER = 'nova.conductor.manager.ComputeTaskManager.'

    def __init__(self, world):
        super().__init__()
        self.world = world

    def _setUp(self):
        world = self.world
        real_schedule = conductor_manager.ComputeTaskManager.\
            _schedule_instances
        real_build = conductor_manager.ComputeTaskManager.\
            schedule_and_build_instances
        real_get_by_host = host_mapping.HostMapping.get_by_host
        scheduled = []

        def schedule(*args, **kwargs):
            host_lists = real_schedule(*args, **kwargs)
            if world.drop_next_hand_off:
                world.drop_next_hand_off = False
                scheduled.append(True)
            return host_lists

        def get_by_host(cls, context, host):
            # The conductor's first read once its scheduler claimed:
            # outside the try that buries a server whose scheduling
            # failed.
            if scheduled:
                scheduled.pop()
                raise HandOffDropped()
            return real_get_by_host(context, host)

        def build(*args, **kwargs):
            world.note_hand_off()
            try:
                return real_build(*args, **kwargs)
            except HandOffDropped:
                return None
        self.useFixture(fixtures_lib.MonkeyPatch(
            self._MANAGER + '_schedule_instances', schedule))
        self.useFixture(fixtures_lib.MonkeyPatch(
            self._MANAGER + 'schedule_and_build_instances', build))
        self.useFixture(fixtures_lib.MonkeyPatch(
            'nova.objects.host_mapping.HostMapping.get_by_host',
            classmethod(get_by_host)))


class World(test_move_faults.MoveChecks, base.Cell0RebuildTestCase):
    """A buried server and everything the actors act on, per schedule.

    Subclasses run schedules with :meth:`run_schedule`; actors.py builds
    the actors from this world, invariants.py checks it afterwards.
    """

    #: Whether the server waits for room (pending_actors.open_wait) in
    #: every schedule: the world of the pending service's actors.
    pending = False

    def setUp(self):
        super().setUp()
        started = time.monotonic()
        # What reset() clears, counted during the set-up too.
        self.hand_offs = 0
        self.wait_log = []
        # Casts made calls, and the compute's build threads run in the
        # caller's: a segment ends only when all it set off has ended.
        self.useFixture(nova_fixtures.CastAsCallFixture(self))
        self.useFixture(nova_fixtures.SpawnIsSynchronousFixture())
        self.engine = explorer.Explorer()
        # Before the first boot: Nova's RPC dispatcher keeps the conductor
        # methods it found on first use.
        self.useFixture(DroppedHandOffs(self))
        self.useFixture(step_points.StepPoints(self.engine.step))
        self.useFixture(reflect_once.ReflectOnce())
        self.useFixture(pending_actors.WaitLog(self))
        self.api_b, self.admin_api_b = self._second_api()
        self._start_compute('host1')
        self._set_capacity(False)
        self.server = self._buried()
        self.server_id = self.server['id']
        self.create_request_id = self._create_request_id()
        self._set_capacity(True)
        if self.pending:
            pending_actors.open_wait(self)
        self.engines = self._engines()
        self._count_writes()
        self.snapshot = Snapshot(self.engines)
        self.snapshot.take()
        self.epoch = timeutils.utcnow()
        # The global oslo_utils.timeutils.set_time_override sets, without
        # its deprecation warning at each of thousands of calls.
        self.useFixture(fixtures_lib.MonkeyPatch(
            'oslo_utils.timeutils._override_time', None))
        self.setup_seconds = time.monotonic() - started
        self.schedules = 0
        self.schedule_seconds = 0.0
        self.timing = {'reset': 0.0, 'run': 0.0, 'check': 0.0}

    def start_service(self, name, host=None, **kwargs):
        """Nova's service, without its heartbeat timer.

        A heartbeat every report_interval seconds of real time lands in a
        schedule or not depending on how fast the machine runs it: once
        the frozen clock has moved past service_down_time, a service is
        up in one run of a schedule and down in its replay (the replay
        then diverges). :meth:`advance_clock` reports the heartbeats
        that time would have seen instead.
        """
        self.flags(report_interval=0)
        return super().start_service(name, host=host, **kwargs)

    def _second_api(self):
        """A second nova-api app (with the filter), as a second process."""
        app = wsgi.Loader().load_app('osapi_compute')
        wsgi_app._setup_service('host-b', 'osapi_compute')
        intercept = interceptor.RequestsInterceptor(
            lambda: app, url='http://%s:80/' % SECOND_API_HOST)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        url = 'http://%s:80/v2.1' % SECOND_API_HOST
        user = api_client.TestOpenStackClient(
            'fake', url, project_id=self.api.project_id,
            roles=['reader', 'member'])
        admin = api_client.TestOpenStackClient(
            'admin', url, project_id=self.api.project_id,
            roles=['reader', 'member', 'admin'])
        user.microversion = admin.microversion = 'latest'
        return user, admin

    def _create_request_id(self):
        """The original create's request id; its events, in the world."""
        with nova_context.target_cell(self.admin_context,
                                      self._cell0()) as cctxt:
            engine = main_db_api.get_engine(context=cctxt)
        with engine.connect() as conn:
            request_id = conn.execute(sa.text(
                "SELECT request_id FROM instance_actions WHERE "
                "instance_uuid = :u AND action = 'create'"),
                {'u': self.server_id}).scalar()
            self.create_events = sorted(row[0] for row in conn.execute(
                sa.text(invariants.events_of_action()),
                {'u': self.server_id, 'r': request_id}))
        return request_id

    def cell_engine(self, name):
        with nova_context.target_cell(self.admin_context,
                                      self.cell_mappings[name]) as cctxt:
            return main_db_api.get_engine(context=cctxt)

    def _engines(self):
        engines = {'api': api_db_api.get_engine(),
                   'placement': placement_db_api.placement_context_manager.
                   writer.get_engine()}
        for name in self.cell_mappings:
            engines[name] = self.cell_engine(name)
        return engines

    def _count_writes(self):
        """Tell the explorer which segments write (the others prune)."""
        def before_execute(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith(_WRITES):
                self.engine.quiet(False)
        for engine in self.engines.values():
            sa.event.listen(engine, 'before_cursor_execute', before_execute)
            self.addCleanup(sa.event.remove, engine,
                            'before_cursor_execute', before_execute)

    # One schedule -----------------------------------------------------------

    def reset(self):
        """Back to the buried server, clock frozen, nothing recorded."""
        self.snapshot.restore()
        self._reset_compute()
        timeutils._override_time = self.epoch
        self.drop_next_hand_off = False
        self.notifier.reset()
        self.answers = []
        self.accepted = []
        self.hand_offs = 0
        self.wait_log = []
        self.passes = []
        self.errors = []

    def _reset_compute(self):
        """The compute forgets what it built: its databases went back."""
        manager = self.computes['host1'].manager
        manager.driver.instances.clear()
        manager.rt.tracked_instances.clear()
        manager.rt.tracked_migrations.clear()
        manager.update_available_resource(self.admin_context)

    def note_hand_off(self):
        """Count a hand-off to the conductor of the server as a
        BuildRequest: a move of it (the conductor builds from that).
        """
        server_id = getattr(self, 'server_id', None)  # None: set-up's
        if server_id and self._where(server_id)[2]:
            self.hand_offs += 1

    def drop_hand_off(self):
        """Nova's conductor drops the next hand-off (DroppedHandOffs)."""
        # Not a database write, but it changes what the conductor does:
        # never quiet (never reordered).
        self.engine.quiet(False)
        self.drop_next_hand_off = True

    @property
    def hand_off_timeout(self):
        return cfg.CONF.cell0_rebuild.hand_off_timeout

    def advance_clock(self, seconds=None):
        """Let every lease run out: time moves past move_lease_seconds.

        :param seconds: how far it moves instead.
        """
        # Not a database write, but what every lease check reads: the
        # segment that moves the clock is never quiet (never reordered).
        self.engine.quiet(False)
        timeutils._override_time = timeutils.utcnow() + datetime.timedelta(
            seconds=seconds or self.lease_seconds + 1)
        # Every service kept reporting while the time passed (a compute
        # disabled stays disabled: that is not its heartbeat).
        for name in self.cell_mappings:
            with self.engines[name].begin() as conn:
                conn.execute(sa.text(
                    'UPDATE services SET last_seen_up = :now WHERE '
                    'deleted = 0'), {'now': timeutils.utcnow()})

    def record(self, actor, what, resp, write=None):
        """Keep an answer; a 2xx to a write is a write Nova accepted."""
        self.answers.append((actor, what, resp.status, resp.body))
        if write is not None and 200 <= resp.status < 300:
            self.accepted.append((actor,) + write)
        return resp

    def run_schedule(self, actors, prefix=(), chooser=None):
        """Reset the world and run *actors* in the order *prefix* says.

        :returns: the explorer's Run.
        """
        started = time.monotonic()
        self.reset()
        reset = time.monotonic()
        self.timing['reset'] += reset - started
        try:
            return self.engine.run([a(self) for a in actors], prefix,
                                   chooser, track_quiet=True)
        finally:
            self.schedules += 1
            self.timing['run'] += time.monotonic() - reset
            self.schedule_seconds += time.monotonic() - started

    def check(self, tables):
        """The invariants once every actor ended, and cron's heal ran."""
        started = time.monotonic()
        try:
            return invariants.check(self, tables)
        finally:
            self.timing['check'] += time.monotonic() - started


def results_dir():
    """Where each test writes its counts, for tools/ci/interleavings_summary.
    """
    return os.environ.get('CELL0_REBUILD_INTERLEAVINGS_RESULTS',
                          os.path.join(os.getcwd(), '.interleavings'))


def write_results(test_id, schedules, violations, seconds, groups=None):
    """One JSON file per test: its schedules, violations and timings."""
    directory = results_dir()
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, test_id + '.json'), 'w') as out:
        json.dump({'test': test_id, 'schedules': schedules,
                   'seconds': seconds, 'groups': groups or {},
                   'violations': violations}, out,
                  indent=1)


text_content = content.text_content


class Exploration(World):
    """Explores every schedule of groups of actors, checks each one."""

    def explore(self, groups, sample=None):
        """Run every schedule of each group of actor names (or, with
        *sample* = (count, seed), that many seeded random schedules).

        Fails the test with each violating schedule's one-line spec.
        """
        tables = invariants.Tables(self.engines)
        violations = []
        self.per_group = {}
        for names in groups:
            before = self.schedules
            builders = actors.build(names)

            def run_one(prefix, chooser, builders=builders):
                return self.run_schedule(builders, prefix, chooser)
            if sample:
                count, seed = sample
                runs = (run_one((), explorer.random_chooser(seed + i))
                        for i in range(count))
            else:
                runs = explorer.explore(run_one)
            for run in runs:
                for kind, detail in self.check(tables):
                    violations.append({'kind': kind, 'detail': detail,
                                       'spec': run.spec,
                                       'trace': run.describe()})
            self.per_group[','.join(names)] = self.schedules - before
        write_results(self.id(), self.schedules, violations,
                      dict(self.timing, setup=self.setup_seconds),
                      self.per_group)
        if violations:
            self.fail('%d schedules\n%s' % (
                self.schedules, describe(violations)))

    def replay(self, spec):
        """Run one schedule from its spec; returns its violations."""
        names, choices = explorer.parse_spec(spec)
        run = self.last_run = self.run_schedule(actors.build(names), choices)
        self.assertEqual(choices, run.choices[:len(choices)])
        return self.check(invariants.Tables(self.engines))

    def assertNotFound(self, kind, spec):
        """Replay *spec*: no violation of *kind* (others are reported too).
        """
        violations = self.replay(spec)
        self.assertNotIn(kind, [k for k, _ in violations],
                         '%s\n%s' % (spec, '\n'.join(
                             '%s: %s' % v for v in violations)))


def describe(violations):
    """Violations by kind, each with one replayable schedule."""
    by_kind = {}
    for violation in violations:
        by_kind.setdefault(violation['kind'], []).append(violation)
    lines = ['%d violations' % len(violations)]
    for kind, found in sorted(by_kind.items()):
        first = found[0]
        lines.append('%s: %d, e.g. replay %s\n  (%s)\n%s' % (
            kind, len(found), first['spec'], first['detail'],
            first['trace']))
    return '\n'.join(lines)


def balanced(pairs, classes, cost):
    """Pairs in *classes* groups of about equal *cost*, heaviest first."""
    groups = [[] for _ in range(classes)]
    costs = [0] * classes
    for pair in sorted(pairs, key=cost, reverse=True):
        lightest = costs.index(min(costs))
        groups[lightest].append(pair)
        costs[lightest] += cost(pair)
    return groups


def _pairs_test(pairs):
    def test_every_interleaving(self):
        self.explore(self.pairs)
    return test_every_interleaving


def pair_classes(module, name, pairs, classes, cost, **attributes):
    """Exploration classes that explore *pairs*, spread over *classes* of
    about equal cost, so that stestr's workers share them evenly.

    :param module: the test module's ``__name__``: its test ids.
    :param name: the classes' name, formatted with their number.
    :param attributes: set on each class (``pending=True``: its world).
    :returns: {class name: class}, for the test module's globals.
    """
    found = {}
    for number, group in enumerate(balanced(pairs, classes, cost)):
        class_name = name % number
        found[class_name] = type(class_name, (Exploration,), dict(
            attributes, __module__=module,
            __doc__='Pairs: %s.' % ', '.join('+'.join(p) for p in group),
            pairs=group, test_every_interleaving=_pairs_test(group)))
    return found
