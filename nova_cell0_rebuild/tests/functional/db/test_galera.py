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

"""The journal's and the relays' ledger's compare-and-swaps raced through
two Galera nodes.

On one node the loser of a compare-and-swap finds rowcount 0. Through two
nodes of a Galera cluster it usually loses at COMMIT instead, when its
write-set fails certification: MySQL error 1213, oslo.db's DBDeadlock.
These tests race our real methods, each side with an engine facade of its
own on its own node, and check that one side wins and the other gets the
domain exception (never a DBDeadlock, never both winning).

NOVA_CELL0_REBUILD_GALERA gives the node URLs, comma-separated (two at
least; ``tools/ci/galera-cluster.sh urls`` prints them). Without it, or
with a cluster that does not answer, the tests skip, and fail instead with
NOVA_CELL0_REBUILD_REQUIRE_DBS set, as the other backends' tests do.
NOVA_CELL0_REBUILD_GALERA_ROUNDS sets the rounds per race (default 50).
"""

import collections
import datetime
import logging
import os
import threading
import time
import uuid

import fixtures
from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils
from oslotest import base as oslo_base
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url
from testtools import content

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.objects import relay_announcement as announcement
from nova_cell0_rebuild.tests.functional.db import base
from nova_cell0_rebuild.tests import quiet_output

NODES = [url for url in os.environ.get(
    'NOVA_CELL0_REBUILD_GALERA', '').split(',') if url]
ROUNDS = int(os.environ.get('NOVA_CELL0_REBUILD_GALERA_ROUNDS', '50'))
INSTANCE = '0b0b4b26-6f7e-4c1c-9a43-0a8f0e6c7d21'
LEASE = 300
Status = fields.MoveStatus
Step = fields.MoveStep
#: What a loser may get: the domain exceptions of our compare-and-swaps.
DOMAIN = (exception.LeaseHeld, exception.JournalConflict,
          exception.MoveInProgress)
WON = 'won'
LOG = logging.getLogger(__name__)


def node_urls(database):
    """The cluster's node URLs, pointed at *database*."""
    return [sa_url.make_url(url).set(database=database) for url in NODES]


class GaleraDatabase(fixtures.Fixture):
    """A fresh database on the cluster, and a facade per node on it.

    Created through the first node: Galera replicates DDL to the others
    before it returns (total order isolation).
    """

    def _setUp(self):
        self.name = 'cell0_galera_%s' % uuid.uuid4().hex[:12]
        admin = sa.create_engine(node_urls('')[0])
        self.addCleanup(admin.dispose)
        with admin.begin() as connection:
            connection.execute(sa.text(
                'CREATE DATABASE %s CHARACTER SET utf8mb4' % self.name))
        self.addCleanup(self._drop, admin)
        self.facades = []
        for url in node_urls(self.name):
            facade = enginefacade.transaction_context()
            facade.configure(connection=url.render_as_string(
                hide_password=False))
            self.facades.append(facade)
            self.addCleanup(
                lambda f=facade: f.writer.get_engine().dispose())

    def _drop(self, admin):
        with admin.begin() as connection:
            connection.execute(sa.text('DROP DATABASE %s' % self.name))


class GaleraTestCase(quiet_output.CappedDetails, oslo_base.BaseTestCase):
    """A test on two nodes of a Galera cluster, each thread on its own.

    The plugin's facade is looked up per thread: a thread sees the facade
    of the node it was given (the first node's by default).
    """

    def setUp(self):
        super().setUp()
        if not quiet_output.debugging():
            self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        if len(NODES) < 2:
            self._unavailable('NOVA_CELL0_REBUILD_GALERA names no two '
                              'Galera nodes')
        try:
            self.db = self.useFixture(GaleraDatabase())
        except db_exc.DBConnectionError as exc:
            self._unavailable('Galera cluster not reachable: %s' % exc)
        except sa.exc.OperationalError as exc:
            self._unavailable('Galera cluster not reachable: %s' % exc)
        self._local = threading.local()
        self.useFixture(fixtures.MockPatch(
            'nova_cell0_rebuild.db.api.get_context_manager',
            side_effect=self._facade))
        objects.register_all()
        migration.db_sync(self.db.facades[0].writer.get_engine())
        self._await_schema()

    def _await_schema(self):
        """Wait until every node has the tables and columns migrations made.

        Galera runs DDL in total order, but a node applies it when its
        turn comes: under load the second node answered "table doesn't
        exist" to the first rounds of a race, and once the tables were
        there, "unknown column" for a column a later migration added.
        """
        engines = [facade.writer.get_engine() for facade in self.db.facades]
        schema = self._schema(engines[0])
        deadline = time.monotonic() + 60
        for engine in engines[1:]:
            while self._schema(engine) != schema:
                self.assertLess(time.monotonic(), deadline,
                                'a node never had the schema %s' % schema)
                time.sleep(0.1)

    @staticmethod
    def _schema(engine):
        """{table: column names} of *engine*'s node, read afresh."""
        inspector = sa.inspect(engine)
        return {table: sorted(column['name']
                              for column in inspector.get_columns(table))
                for table in inspector.get_table_names()}

    def _unavailable(self, why):
        if base.REQUIRE_DBS:
            self.fail(why)
        self.skipTest(why)

    def _facade(self, conf=None):
        return getattr(self._local, 'facade', self.db.facades[0])

    def on_node(self, node):
        """Make this thread's journal calls go through *node* (0, 1, 2)."""
        self._local.facade = self.db.facades[node]

    def race(self, reset, left, right, nodes=(0, 1)):
        """Run ROUNDS rounds of *left* against *right*, each on its node.

        :param reset: called with a fencing token, puts the row in its
            starting state through the first node and returns the token
            the row then has (None: no row); each side waits until its
            node reads that, then reads the journal there.
        :param left, right: called with a context and what was read;
            return normally when they won.
        :returns: a Counter of (left outcome, right outcome).
        """
        outcomes = collections.Counter()
        for round_ in range(ROUNDS):
            token = reset(10 + round_)
            results = {}
            barrier = threading.Barrier(2)

            def side(name, node, work):
                try:
                    self.on_node(node)
                    context = nova_context.get_admin_context()
                    journal = self._await(context, token)
                    barrier.wait(timeout=30)
                except Exception as exc:
                    # Not part of the race: say so, and do not leave the
                    # other side waiting at the barrier.
                    barrier.abort()
                    results[name] = 'before the race: %r' % exc
                    return
                try:
                    work(context, journal)
                    results[name] = WON
                except DOMAIN as exc:
                    results[name] = type(exc).__name__
                except Exception as exc:
                    results[name] = type(exc).__name__
            self.in_threads(lambda: side('l', nodes[0], left),
                            lambda: side('r', nodes[1], right))
            outcomes[(results.get('l'), results.get('r'))] += 1
        return self.reported(outcomes)

    @staticmethod
    def in_threads(*calls):
        """Run each of *calls* in a thread of its own; wait for all."""
        threads = [threading.Thread(target=call) for call in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def reported(self, outcomes):
        """*outcomes*, kept as the test's detail and logged."""
        report = '\n'.join('%4d  %s / %s' % (n, left, right) for (
            left, right), n in outcomes.most_common())
        self.addDetail('outcomes', content.text_content(report))
        LOG.warning('%s, %d rounds:\n%s', self.id(),
                    sum(outcomes.values()), report)
        return outcomes

    def _await(self, context, token):
        """The journal as this thread's node reads it once it has *token*.

        (Galera applies a write-set on the other nodes asynchronously.)
        """
        deadline = time.monotonic() + 10
        while True:
            journal = objects.MoveJournal.get_by_instance_uuid(context,
                                                               INSTANCE)
            have = journal.lease_token if journal is not None else None
            if have == token or time.monotonic() > deadline:
                return journal
            time.sleep(0.002)

    def assertOneWonOthersLost(self, outcomes):
        """Never both won, and each loser got a domain exception."""
        domain = {cls.__name__ for cls in DOMAIN}
        for (left, right), count in outcomes.items():
            self.assertEqual(1, [left, right].count(WON),
                             'round(s) %d: %s / %s' % (count, left, right))
            loser = right if left == WON else left
            self.assertIn(loser, domain,
                          '%d round(s): the loser got %s' % (count, loser))


class TestCompareAndSwapThroughTwoNodes(GaleraTestCase):

    @db_api.retry_on_deadlock
    def _write_row(self, token, status=Status.IN_PROGRESS):
        """The row as an interrupted (or, with DONE, finished) move left it.

        Retried on DBDeadlock: the last round's losing write-set may still
        be applied on the first node, which aborts this local transaction.
        """
        past = timeutils.utcnow() - datetime.timedelta(days=1)
        engine = self.db.facades[0].writer.get_engine()
        table = models.MoveJournal.__table__
        with engine.begin() as connection:
            connection.execute(sa.delete(table))
            if token is not None:
                connection.execute(sa.insert(table).values(
                    id=1, instance_uuid=INSTANCE, status=status,
                    step=Step.CLAIMED, attempts=1, lease_token=token,
                    owner='old', created_at=past, updated_at=past,
                    lease_expires_at=past))
        return token

    def test_take_over_against_take_over(self):
        def take_over(context, journal):
            journal.take_over('heal', LEASE)
        outcomes = self.race(self._write_row, take_over, take_over)
        self.assertOneWonOthersLost(outcomes)

    def test_holder_advance_against_take_over(self):
        def advance(context, journal):
            journal.advance(Step.BUILD_REQUEST_WRITTEN)

        def take_over(context, journal):
            journal.take_over('heal', LEASE)
        outcomes = self.race(self._write_row, advance, take_over)
        self.assertOneWonOthersLost(outcomes)

    def test_start_against_start_no_row(self):
        def start(context, journal):
            objects.MoveJournal.start(context, INSTANCE, LEASE,
                                      current=journal)
        outcomes = self.race(lambda token: self._write_row(None),
                             start, start)
        self.assertOneWonOthersLost(outcomes)

    def test_start_against_start_of_a_finished_move(self):
        def start(context, journal):
            objects.MoveJournal.start(context, INSTANCE, LEASE,
                                      current=journal)
        outcomes = self.race(
            lambda token: self._write_row(token, status=Status.DONE),
            start, start)
        self.assertOneWonOthersLost(outcomes)

    def test_forget_against_advance(self):
        # DELETE's forget (destroy_if_unchanged) against the holder's next
        # step: each compares the step the other changes or removes.
        def forget(context, journal):
            journal.destroy_if_unchanged()

        def advance(context, journal):
            journal.advance(Step.BUILD_REQUEST_WRITTEN)
        outcomes = self.race(self._write_row, forget, advance)
        self.assertOneWonOthersLost(outcomes)


class TestRelayLedgerThroughTwoNodes(GaleraTestCase):
    """Two relays, each writing through its own node, and one burial.

    The ledger (objects/relay_announcement.py) must let exactly one of them
    announce it: on Galera the loser's INSERT or UPDATE usually fails
    certification at COMMIT (DBDeadlock), which the claim retries and then
    reads as the other relay's win, never as an error or as its own.
    """

    def _await_expired(self, message_id):
        """Wait until the second node reads the burial's claim as expired.

        (Galera applies a write-set on the other nodes asynchronously.)
        """
        deadline = time.monotonic() + 10
        self.on_node(1)
        context = nova_context.get_admin_context()
        while True:
            with db_api.reader(context) as session:
                row = session.query(models.RelayAnnouncement).filter_by(
                    instance_uuid=INSTANCE, message_id=message_id).first()
            if row is not None and row.lease_expires_at < timeutils.utcnow():
                return
            self.assertLess(time.monotonic(), deadline,
                            'node 2 never read the claim as expired')
            time.sleep(0.05)

    def _expired_claim(self, message_id):
        """A claim of a relay that died: its lease ran out long ago."""
        self.on_node(0)
        context = nova_context.get_admin_context()
        _outcome, claim = objects.RelayAnnouncement.claim(
            context, INSTANCE, message_id, 'relay-dead', LEASE)
        past = timeutils.utcnow() - datetime.timedelta(days=1)
        with db_api.writer(context) as session:
            session.query(models.RelayAnnouncement).filter_by(
                id=claim.id).update({'lease_expires_at': past},
                                    synchronize_session=False)
        self._await_expired(message_id)
        return claim

    def _race(self, prepare, left, right):
        """ROUNDS rounds, each on a burial of its own (a message id).

        :param prepare: called with the message id before the race;
            returns what both sides are handed.
        :returns: a Counter of (left outcome, right outcome).
        """
        outcomes = collections.Counter()
        for round_ in range(ROUNDS):
            message_id = 'burial-%d' % round_
            prepared = prepare(message_id)
            results = {}
            barrier = threading.Barrier(2)

            def side(name, node, work):
                self.on_node(node)
                context = nova_context.get_admin_context()
                try:
                    barrier.wait(timeout=30)
                    results[name] = work(context, message_id, prepared)
                except Exception as exc:
                    barrier.abort()
                    results[name] = '%s: %s' % (type(exc).__name__, exc)
            self.in_threads(lambda: side('l', 0, left),
                            lambda: side('r', 1, right))
            outcomes[(results.get('l'), results.get('r'))] += 1
        return self.reported(outcomes)

    @staticmethod
    def _claim(context, message_id, _prepared):
        return objects.RelayAnnouncement.claim(
            context, INSTANCE, message_id, 'relay', LEASE)[0]

    def test_claim_against_claim(self):
        outcomes = self._race(lambda message_id: None,
                              self._claim, self._claim)
        self.assertEqual({(announcement.CLAIMED, announcement.HELD)},
                         {tuple(sorted(pair)) for pair in outcomes})

    def test_take_over_against_take_over(self):
        outcomes = self._race(self._expired_claim, self._claim, self._claim)
        self.assertEqual({(announcement.HELD, announcement.TAKEN_OVER)},
                         {tuple(sorted(pair)) for pair in outcomes})

    def test_mark_announced_against_take_over(self):
        # The relay that held it publishes and marks it announced just as
        # another takes its expired lease over: never both.
        def mark(context, message_id, claim):
            claim._context = context
            return 'marked' if claim.mark_announced() else 'refused'
        outcomes = self._race(self._expired_claim, mark, self._claim)
        self.assertLessEqual(
            set(outcomes), {('marked', announcement.ANNOUNCED),
                            ('marked', announcement.HELD),
                            ('refused', announcement.TAKEN_OVER)})


class TestPendingWaitsThroughTwoNodes(GaleraTestCase):
    """Two dispatchers of issue 27's waits, each through its own node.

    A deposed dispatcher and its successor (or a dispatcher and a user's
    DELETE .../wait) write one wait: exactly one wins, and the loser's
    compare-and-swap answers False, even when Galera refuses it at COMMIT
    (DBDeadlock), never an error.
    """

    def _waiting(self, round_):
        """A wait of its own per round, opened through the first node."""
        self.on_node(0)
        context = nova_context.get_admin_context()
        instance = str(uuid.uuid5(uuid.NAMESPACE_URL, 'wait-%d' % round_))
        now = timeutils.utcnow()
        objects.Cell0Wait.open(context, instance, 'project', 'user', 'api',
                               now, now + datetime.timedelta(hours=1))
        return instance

    @staticmethod
    def _await_wait(context, instance):
        """The wait as this node reads it once the open reached it."""
        deadline = time.monotonic() + 10
        while True:
            wait = objects.Cell0Wait.get_by_instance_uuid(context, instance)
            if wait is not None:
                return wait
            if time.monotonic() > deadline:
                raise AssertionError('the wait never reached this node')
            time.sleep(0.05)

    def _race(self, left, right):
        """ROUNDS rounds of *left* against *right* on one wait each.

        :returns: a Counter of (left outcome, right outcome).
        """
        outcomes = collections.Counter()
        for round_ in range(ROUNDS):
            instance = self._waiting(round_)
            results = {}
            barrier = threading.Barrier(2)

            def side(name, node, work):
                self.on_node(node)
                context = nova_context.get_admin_context()
                try:
                    wait = self._await_wait(context, instance)
                    barrier.wait(timeout=30)
                    results[name] = work(wait)
                except Exception as exc:
                    barrier.abort()
                    results[name] = '%s: %s' % (type(exc).__name__, exc)
            self.in_threads(lambda: side('l', 0, left),
                            lambda: side('r', 1, right))
            outcomes[(results.get('l'), results.get('r'))] += 1
        return self.reported(outcomes)

    @staticmethod
    def _dispatch(wait):
        return 'dispatched' if wait.dispatch('pending', LEASE) else 'lost'

    @staticmethod
    def _cancel(wait):
        return 'ended' if wait.end(fields.WaitReason.CANCELLED,
                                   'cancelled') else 'lost'

    def test_dispatch_against_dispatch(self):
        outcomes = self._race(self._dispatch, self._dispatch)
        self.assertEqual({('dispatched', 'lost')},
                         {tuple(sorted(pair)) for pair in outcomes})

    def test_dispatch_against_cancel(self):
        outcomes = self._race(self._dispatch, self._cancel)
        self.assertLessEqual(set(outcomes), {('dispatched', 'lost'),
                                             ('lost', 'ended')})

    def test_take_against_take(self):
        # Two copies elected at once (a lock held twice): distinct epochs,
        # and only the newer one heartbeats, each through its own node.
        outcomes = collections.Counter()
        for round_ in range(ROUNDS):
            name = 'pending-%d' % round_
            results = {}
            barrier = threading.Barrier(2)

            def side(side_name, node):
                self.on_node(node)
                context = nova_context.get_admin_context()
                try:
                    barrier.wait(timeout=30)
                    epoch = objects.PendingEpoch.take(context, name,
                                                      side_name)
                    barrier.wait(timeout=30)
                    results[side_name] = (epoch, objects.PendingEpoch.
                                          heartbeat(context, name, epoch))
                except Exception as exc:
                    barrier.abort()
                    results[side_name] = '%s: %s' % (type(exc).__name__,
                                                     exc)
            self.in_threads(lambda: side('l', 0), lambda: side('r', 1))
            outcomes[tuple(sorted(map(str, results.values())))] += 1
        self.reported(outcomes)
        self.assertEqual({('(1, False)', '(2, True)')}, set(outcomes))
