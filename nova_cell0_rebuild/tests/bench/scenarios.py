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

"""The measurements B1-B6, run inside one harness (one process).

Every comparison is interleaved: the arms take turns (A, B, C, then B, C,
A, ...), each on a quiet system (no statement on any database for
150 ms), so that drift and machine noise hit every arm alike. Only raw
samples are collected here; ``report`` summarizes them.
"""

import time

from nova_cell0_rebuild.tests.bench import harness as harness_lib
from nova_cell0_rebuild.tests.bench import profiling
from nova_cell0_rebuild.tests.bench import sql
from nova_cell0_rebuild.tests.bench import waiting

REBUILD = 'rebuild'
CREATE = 'create'
RECREATE = 'delete+re-create'
CREATE_WITH = 'create with filter'
CREATE_WITHOUT = 'create without filter'

progress = harness_lib.progress


def _rotations(arms, rounds):
    """Round i runs the arms rotated by i: every arm takes every place."""
    for index in range(rounds):
        shift = index % len(arms)
        yield arms[shift:] + arms[:shift]


class Bench(object):
    """The scenario given to the harness; fills ``self.raw``.

    :param options: the parsed command line (see ``runner``).
    """

    def __init__(self, options):
        self.options = options
        self.raw = {}
        self.profiles = {}
        self.h = None

    def __call__(self, h):
        self.h = h
        started = time.monotonic()
        self.warm_up()
        self.b1_b2()
        self.b3()
        self.b4()
        self.b5()
        self.b6()
        self.raw['scenario_seconds'] = time.monotonic() - started

    # -- one timed operation each --------------------------------------------

    def _timed_call(self, arm, app, req, expect):
        profile = self.profiles.get(arm)
        if profile is None:
            return self.h.call(app, req, expect)
        profile.start()
        try:
            return self.h.call(app, req, expect)
        finally:
            profile.stop()

    def rebuild(self, server_id):
        """POST rebuild of a cell0 server -> ACTIVE.

        :returns: (API seconds, seconds to ACTIVE).
        """
        h = self.h
        req = h.rebuild_request(server_id)
        start = time.perf_counter()
        self._timed_call(REBUILD, 'with', req, 202)
        answered = time.perf_counter()
        active = h.wait_for('cell1', [server_id], 'active')[server_id]
        return answered - start, active - start

    def create(self, app='with', arm=CREATE):
        """POST /servers of the bench's server shape -> ACTIVE."""
        h = self.h
        req = h.create_request()
        start = time.perf_counter()
        resp = self._timed_call(arm, app, req, 202)
        answered = time.perf_counter()
        server_id = resp.json['server']['id']
        active = h.wait_for('cell1', [server_id], 'active')[server_id]
        return answered - start, active - start

    def recreate(self, server_id):
        """Today's alternative, on Nova without the filter.

        DELETE the buried server, POST the same create -> ACTIVE (a new
        uuid).
        """
        h = self.h
        delete = h.delete_request(server_id)
        create = h.create_request()
        start = time.perf_counter()
        h.call('without', delete, 204)
        resp = h.call('without', create, 202)
        answered = time.perf_counter()
        server_id = resp.json['server']['id']
        active = h.wait_for('cell1', [server_id], 'active')[server_id]
        return answered - start, active - start

    # -- phases --------------------------------------------------------------

    def warm_up(self):
        """Untimed: first calls load policies, caches and code paths."""
        h = self.h
        rounds = self.options.warmup
        progress('warm-up: %d rounds', rounds)
        buried = h.bury('with', rounds)
        plain = h.bury('without', rounds)
        for index in range(rounds):
            for operation in (lambda: self.rebuild(buried[index]),
                              lambda: self.create(),
                              lambda: self.create('without'),
                              lambda: self.recreate(plain[index])):
                operation()
                h.settle()
        # Nova's scheduler loads a host's instances the first time it
        # weighs it: let that happen here, not in a measurement.
        for _ in range(max(0, h.compute_count - 4 * rounds)):
            self.create('without')
            h.settle()

    def b1_b2(self):
        """B1 API latency and B2 time to ACTIVE, interleaved.

        Rebuild, create and delete + re-create take turns.
        """
        h = self.h
        runs = self.options.runs
        if self.options.profile:
            self.profiles = {arm: profiling.Sampler()
                             for arm in (REBUILD, CREATE)}
        progress('B1/B2: burying %d + %d servers', runs, runs)
        buried = h.bury('with', runs)
        plain = h.bury('without', runs)
        samples = {arm: {'api': [], 'active': [], 'order': []}
                   for arm in (REBUILD, CREATE, RECREATE)}
        progress('B1/B2: %d interleaved rounds', runs)
        for index, order in enumerate(
                _rotations([REBUILD, CREATE, RECREATE], runs)):
            for place, arm in enumerate(order):
                if arm == REBUILD:
                    api, active = self.rebuild(buried[index])
                elif arm == CREATE:
                    api, active = self.create()
                else:
                    api, active = self.recreate(plain[index])
                samples[arm]['api'].append(api)
                samples[arm]['active'].append(active)
                samples[arm]['order'].append(place)
                h.settle()
        self.raw['b1_b2'] = samples

    def b3(self):
        """B3: the same create with and without the filter, interleaved."""
        h = self.h
        runs = self.options.b3_runs
        samples = {arm: {'api': [], 'active': []}
                   for arm in (CREATE_WITH, CREATE_WITHOUT)}
        progress('B3: %d interleaved rounds', runs)
        for order in _rotations([CREATE_WITH, CREATE_WITHOUT], runs):
            for arm in order:
                app = 'with' if arm == CREATE_WITH else 'without'
                api, active = self.create(app, arm=arm)
                samples[arm]['api'].append(api)
                samples[arm]['active'].append(active)
                h.settle()
        self.raw['b3'] = samples

    def _count(self, operation):
        """Statements of one operation, from its request until every
        database is quiet after ACTIVE.

        :returns: {'statements': [(db, normalized sql, origin)],
                   'seconds': API seconds}.
        """
        h = self.h
        h.settle()
        h.counter.start()
        try:
            seconds = operation()
            h.settle(quiet=0.3)
        finally:
            recorded = h.counter.stop()
        return {'statements': [(database, sql.normalize(statement), origin)
                               for database, statement, origin in recorded],
                'seconds': seconds}

    def _counted_rebuild(self, server_id):
        h = self.h

        def operation():
            req = h.rebuild_request(server_id)
            start = time.perf_counter()
            h.call('with', req, 202)
            seconds = time.perf_counter() - start
            h.wait_for('cell1', [server_id], 'active')
            return seconds
        return self._count(operation)

    def _counted_create(self, app):
        h = self.h

        def operation():
            req = h.create_request()
            start = time.perf_counter()
            resp = h.call(app, req, 202)
            seconds = time.perf_counter() - start
            h.wait_for('cell1', [resp.json['server']['id']], 'active')
            return seconds
        return self._count(operation)

    def b4(self):
        """B4: statements per rebuild, few and many others in cell0.

        And per create: Nova's own, and with the filter.
        """
        h = self.h
        conditions = []
        live = h.live_instances('cell0')
        inserted = 0
        for others in (self.options.buried_few, self.options.buried_many):
            missing = others - live - inserted
            if missing > 0:
                progress('B4: inserting %d buried servers into cell0',
                         missing)
                h.insert_buried(missing)
                inserted += missing
            repeats = []
            for repeat in range(self.options.b4_repeats):
                server_id = h.bury('with', 1)[0]
                actual_others = h.live_instances('cell0') - 1
                repeats.append({
                    'others': actual_others,
                    REBUILD: self._counted_rebuild(server_id),
                    CREATE_WITHOUT: self._counted_create('without'),
                    CREATE_WITH: self._counted_create('with'),
                })
            progress('B4: %d others in cell0 measured', actual_others)
            conditions.append({'others': actual_others,
                               'repeats': repeats})
        self.raw['b4'] = {'conditions': conditions,
                          'databases': list(harness_lib.DATABASES)}

    def b5(self):
        """B5: N buried servers rebuilt back to back against N creates.

        Each side runs as two back-to-back batches of N/2, in the order
        rebuild, create, create, rebuild, so that a drift over the run
        (more servers in the cells) hits both sides alike.
        """
        h = self.h
        total = self.options.throughput
        first = total // 2
        progress('B5: burying %d servers', total)
        pool = h.bury('with', total, timeout=600)
        plan = [(REBUILD, first), (CREATE, first),
                (CREATE, total - first), (REBUILD, total - first)]
        batches = []
        for arm, size in plan:
            h.settle(quiet=0.3)
            progress('B5: %s x %d', arm, size)
            uuids = []
            start = time.perf_counter()
            if arm == REBUILD:
                batch, pool = pool[:size], pool[size:]
                for server_id in batch:
                    h.call('with', h.rebuild_request(server_id), 202)
                uuids = batch
            else:
                for _ in range(size):
                    resp = h.call('with', h.create_request(), 202)
                    uuids.append(resp.json['server']['id'])
            posted = time.perf_counter()
            reached = h.wait_for('cell1', uuids, 'active', timeout=600,
                                 partial=True)
            last = max(reached.values()) if reached else time.perf_counter()
            errors = sum(1 for vm, _task in h.states('cell0',
                                                     uuids).values()
                         if vm == 'error')
            batches.append({'arm': arm, 'size': size,
                            'active': len(reached), 'error': errors,
                            'post_seconds': posted - start,
                            'wall_seconds': last - start})
        h.settle()
        self.raw['b5'] = {'batches': batches}

    def b6(self):
        """B6: a waiting server rebuilt by the pending service, against a
        user who looks every 30 s and rebuilds by hand (``waiting``).

        Last: it enables waits and versioned notifications for the rest
        of the run.
        """
        started = time.monotonic()
        raw = waiting.WaitingBench(self.h, self.options.b6_runs,
                                   self.options.b6_seed).run()
        raw['seconds'] = time.monotonic() - started
        progress('B6: %.1f s', raw['seconds'])
        self.raw['b6'] = raw
