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

"""What must hold after every schedule (issue 25), as violation kinds.

:func:`check` returns a list of ``(kind, detail)``; the kind is a short
fixed phrase (the summary counts by it), the detail says what was seen.

1. ``lost``/``undead``: the server is found by GET, or gone exactly when a
   DELETE was accepted;
2. ``homes``: exactly one home (cell0 row, BuildRequest or real-cell row)
   and the mapping agrees;
3. ``write dropped``: every write Nova accepted is on the final server;
4. ``history``: once a deleted server is archived and purged, the shadow
   tables hold its whole history and nothing of it is left outside them;
5. ``answer``: every answer is Nova-style JSON with the right code, never
   a 5xx;
6. ``left behind``: no journal in progress once cron's heal ran, and of
   a deleted server no journal, record, stash, mapping, RequestSpec,
   BuildRequest, group membership or allocation;
7. ``stuck``: no server is still a BuildRequest once the heal of dropped
   hand-offs ran (Nova's conductor dropping one is an actor).

In the pending service's world (the server waits, issue 27), once the
service's sweep ran after every lease (``pending_actors.at_rest``):

8. ``moved twice``: at most one move of the server (a hand-off to the
   conductor of its BuildRequest);
9. ``wait unsettled``: no wait row left ``dispatched``, and none left for
   a server that is no longer in cell0;
10. ``ended wait dispatched``: once a wait ended (the user's cancel), no
    dispatch of it wins;
11. ``pending error``: no pass of the dispatcher raises.
"""

import json

from nova.cmd import manage as nova_manage
import sqlalchemy as sa

from nova_cell0_rebuild.operations import purge as purge_ops
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests.interleavings import pending_actors

#: The history that must reach the shadow tables, by action.
SCHEDULING_FAILURE = 'No valid host'


def events_of_action(prefix=''):
    """SQL: the events of a server's (:u) action of a request (:r).

    :param prefix: '' for Nova's tables, 'shadow_' for the archive's.
    """
    return ('SELECT e.event FROM {0}instance_actions_events e JOIN '
            '{0}instance_actions a ON e.action_id = a.id WHERE '
            'a.instance_uuid = :u AND a.request_id = :r').format(prefix)


def _scalar(engine, sql, **params):
    with engine.connect() as conn:
        return conn.execute(sa.text(sql), params).scalar()


def _rows(engine, sql, **params):
    with engine.connect() as conn:
        return conn.execute(sa.text(sql), params).fetchall()


class Tables(object):
    """Which tables of each database name a server (read once)."""

    def __init__(self, engines):
        self.columns = {}
        for name, engine in engines.items():
            found = {}
            inspector = sa.inspect(engine)
            for table in inspector.get_table_names():
                names = {c['name'] for c in inspector.get_columns(table)}
                for column in ('instance_uuid', 'consumer_id'):
                    if column in names:
                        found[table] = column
                if table in ('instances', 'shadow_instances'):
                    found[table] = 'uuid'
            self.columns[name] = found

    def holding(self, engines, uuid, shadow):
        """{database: {table: rows}} of *uuid*, shadow tables or not."""
        held = {}
        for name, engine in engines.items():
            for table, column in self.columns[name].items():
                if table.startswith('shadow_') != shadow:
                    continue
                count = _scalar(engine, 'SELECT COUNT(*) FROM %s WHERE %s = '
                                ':u' % (table, column), u=uuid)
                if count:
                    held.setdefault(name, {})[table] = count
        return held


def _accepted(world, kind):
    return [entry for entry in world.accepted if entry[1] == kind]


def _answers(world):
    for actor, what, status, body in world.answers:
        if status >= 500:
            yield ('answer 5xx', '%s %s -> %s %s' % (
                actor, what, status, str(body)[:200]))
        elif status >= 400 and not _nova_fault(body, status):
            yield ('answer not a Nova fault', '%s %s -> %s %s' % (
                actor, what, status, str(body)[:200]))


def _nova_fault(body, status):
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return False
    if not isinstance(body, dict) or len(body) != 1:
        return False
    fault = list(body.values())[0]
    return (isinstance(fault, dict) and fault.get('code') == status and
            'message' in fault)


def _found(world, deleted):
    resp = world.admin_api.api_get('/servers/%s' % world.server_id,
                                   check_response_status=False)
    if resp.status >= 500:
        yield ('answer 5xx', 'final GET -> %s' % resp.status)
    elif deleted and resp.status != 404:
        yield ('undead', 'GET %s after an accepted DELETE' % resp.status)
    elif not deleted and resp.status != 200:
        yield ('lost', 'GET %s, no DELETE accepted; where: %s; %s' % (
            resp.status, world._where(world.server_id), resp.body))
    world.final = resp.body.get('server') if resp.status == 200 else None


def _homes(world, deleted):
    mapped, cell0, br, cell1 = where = world._where(world.server_id)
    if deleted:
        if any((cell0, br, cell1)) or mapped != 'deleted':
            yield ('homes', 'deleted, yet %s' % (where,))
        return
    if [cell0, br, cell1].count(True) != 1:
        yield ('homes', 'not exactly one home: %s' % (where,))
    elif not {'cell0': cell0, 'none': br, 'cell1': cell1}.get(mapped):
        yield ('homes', 'mapping disagrees: %s' % (where,))


def _writes(world):
    server = world.final
    if server is None:
        return
    if _accepted(world, 'name') and (server['name'], server.get(
            'description')) != ('renamed', 'edited'):
        yield ('write dropped', 'rename accepted, server is %r/%r' % (
            server['name'], server.get('description')))
    if _accepted(world, 'metadata') and 'added' not in server['metadata']:
        yield ('write dropped', 'metadata accepted, server has %r'
               % server['metadata'])
    if _accepted(world, 'tag') and 'added' not in server.get('tags', []):
        yield ('write dropped', 'tag accepted, server has %r'
               % server.get('tags'))
    locks = _accepted(world, 'lock')
    if locks:
        reason = locks[-1][2]
        locked = (server.get('locked'), server.get('locked_reason'))
        if locked != (reason is not None, reason):
            yield ('write dropped', 'last accepted lock/unlock was %r, '
                   'server has locked=%r reason=%r' % ((reason,) + locked))


def _allocations(world, deleted):
    """A server that is not on a host holds no allocation in placement."""
    if deleted:
        return  # checked with everything else once archived and purged
    where = world._where(world.server_id)
    count = _scalar(world.engines['placement'], 'SELECT COUNT(*) FROM '
                    'allocations WHERE consumer_id = :u', u=world.server_id)
    if count and not where[3]:
        yield ('left behind', 'allocations of a server not in a real '
               'cell: %s' % (where,))


def _journal_in_progress(world):
    rows = _rows(world.engines['api'],
                 'SELECT status, step FROM cell0_rebuild_move_journal '
                 'WHERE instance_uuid = :u', u=world.server_id)
    for status, step in rows:
        if status == 'in_progress':
            yield ('left behind', 'journal in progress at %s' % step)


def _archive_and_purge(world):
    nova_manage.DbCommands().archive_deleted_rows(
        max_rows=1000, until_complete=True, all_cells=True)
    purge_ops.purge(world.admin_context)


def _history(world, tables):
    uuid = world.server_id
    landed = bool(_scalar(world.engines['cell1'], 'SELECT COUNT(*) FROM '
                          'instances WHERE uuid = :u', u=uuid))
    _archive_and_purge(world)
    outside = tables.holding(world.engines, uuid, shadow=False)
    if outside:
        yield ('left behind', 'deleted, archived and purged, yet held '
               'outside the shadow tables: %s' % outside)
    actions = []
    faults = []
    for name in world.cell_mappings:
        engine = world.engines[name]
        actions += _rows(engine, 'SELECT action, request_id FROM '
                         'shadow_instance_actions WHERE instance_uuid = :u',
                         u=uuid)
        faults += _rows(engine, 'SELECT message FROM shadow_instance_faults '
                        'WHERE instance_uuid = :u', u=uuid)
    if ('create', world.create_request_id) not in [tuple(a)
                                                   for a in actions]:
        yield ('history', 'the original create (%s) is not in the shadow '
               'tables: %s' % (world.create_request_id, actions))
    events = []
    for name in world.cell_mappings:
        events += [e for (e,) in _rows(
            world.engines[name], events_of_action('shadow_'), u=uuid,
            r=world.create_request_id)]
    if sorted(events) != world.create_events:
        yield ('history', 'the original create\'s events %s are not in the '
               'shadow tables: %s' % (world.create_events, events))
    if not any(SCHEDULING_FAILURE in (m or '') for (m,) in faults):
        yield ('history', 'the burial fault is not in the shadow tables: '
               '%s' % faults)
    if landed and 'rebuild' not in [a for a, _ in actions]:
        yield ('history', 'the rebuild action is not in the shadow '
               'tables: %s' % actions)


def _heal_at_rest(world):
    """What cron's heal does once every lease ran out, and once a hand-off
    the conductor dropped timed out.

    A move whose holder lost its lease after the cast (heal left it alone
    then) is finished by the next heal: a journal still in progress after
    that one is left behind. A server the conductor dropped is buried in
    cell0 again by the heal after the timeout: one still a BuildRequest
    then is stuck.
    """
    world.advance_clock()
    heal.heal(world.admin_context, world.lease_seconds)
    world.advance_clock(world.hand_off_timeout + 1)
    heal.heal(world.admin_context, world.lease_seconds,
              hand_off_timeout=world.hand_off_timeout)


def _stuck(world):
    """No server waits as a BuildRequest once the heals at rest ran."""
    mapped, _cell0, build_request, _cell1 = world._where(world.server_id)
    if build_request:
        yield ('stuck', 'still a BuildRequest (mapped to %s) after the '
               'heal of dropped hand-offs' % mapped)


def _pending(world):
    """The pending service's invariants (8 to 11), once at rest."""
    for name, error in world.errors:
        yield ('pending error', '%s raised %s' % (name, error))
    if world.hand_offs > 1:
        yield ('moved twice', '%d hand-offs of the server to the conductor'
               % world.hand_offs)
    where = world._where(world.server_id)
    for state, token, attempts in _rows(
            world.engines['api'], 'SELECT state, lease_token, attempts '
            'FROM cell0_rebuild_waits WHERE instance_uuid = :u',
            u=world.server_id):
        if state == 'dispatched':
            yield ('wait unsettled', 'dispatched (attempt %d) at rest; '
                   'server: %s' % (attempts, where))
        elif not where[1]:
            yield ('wait unsettled', '%s, yet the server is not in cell0: '
                   '%s' % (state, where))
    ended = False
    for name, won in world.wait_log:
        if name == 'end' and won:
            ended = True
        elif name == 'dispatch' and won and ended:
            yield ('ended wait dispatched', 'wait CAS log: %s'
                   % world.wait_log)


def check(world, tables):
    """Every invariant after one schedule: a list of (kind, detail)."""
    deleted = bool(_accepted(world, 'delete'))
    _heal_at_rest(world)
    if world.pending:
        pending_actors.at_rest(world)
    found = list(_found(world, deleted))
    violations = found + list(_answers(world))
    violations += list(_homes(world, deleted))
    violations += list(_writes(world))
    violations += list(_journal_in_progress(world))
    violations += list(_stuck(world))
    violations += list(_allocations(world, deleted))
    if world.pending:
        violations += list(_pending(world))
    if deleted:
        violations += list(_history(world, tables))
    return violations
