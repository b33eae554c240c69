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

"""The actors: everyone who may touch a buried server while it moves.

Each entry of :data:`ACTORS` builds an ``explorer.Actor`` from the world
(harness.World). API actors go through Nova's API (with the filter) and
record every answer; a write Nova accepted (2xx) is recorded with what it
wrote, for the invariant that no accepted write is lost. The mutating
calls are those of Nova's API that can answer 2xx for a server in cell0 or
in the move (issue 25, point 2): PUT /servers/{id} (name, description),
lock with a reason and unlock, reset-state; metadata and tags, which Nova
allows once the server is ACTIVE only.
"""

import io

from nova.cmd import manage as nova_manage
from nova import utils

from nova_cell0_rebuild.cmd import manage
from nova_cell0_rebuild.operations import purge as purge_ops
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tests import explorer
from nova_cell0_rebuild.tests.interleavings import pending_actors

#: Lock's locked_reason needs 2.73.
LOCK_VERSION = '2.73'


def _call(world, name, api, method, url, body=None, write=None,
          microversion='latest'):
    with utils.temporary_mutation(api, microversion=microversion):
        resp = _request(api, method, url, body)
    return world.record(name, '%s %s' % (method, url), resp, write)


def _request(api, method, url, body):
    if method == 'POST':
        return api.api_post(url, body, check_response_status=False)
    if method == 'PUT':
        return api.api_put(url, body, check_response_status=False)
    if method == 'DELETE':
        return api.api_delete(url, check_response_status=False)
    return api.api_get(url, check_response_status=False)


def _server(world):
    return '/servers/%s' % world.server_id


def rebuild(name, which):
    def build(world):
        api = world.api if which == 'a' else world.api_b

        def run():
            return _call(world, name, api, 'POST',
                         _server(world) + '/action',
                         {'rebuild': {'imageRef': world.image_id}},
                         write=('rebuild', None))
        return explorer.Actor(name, run)
    return build


def heal_after_lease(name, via_cli):
    """Heal as cron runs it once leases ran out (the clock moves first)."""
    def build(world):
        def run():
            world.advance_clock()
            if via_cli:
                return nova_manage_heal(world)
            return heal.heal(world.admin_context, world.lease_seconds)
        return explorer.Actor(name, run)
    return build


def heal_late(world):
    """Heal once a dropped hand-off timed out (the clock moves first)."""
    def run():
        world.advance_clock(world.hand_off_timeout + 1)
        return heal.heal(world.admin_context, world.lease_seconds,
                         hand_off_timeout=world.hand_off_timeout)
    return explorer.Actor('heal_late', run)


def drop(world):
    """Nova's conductor will drop the next hand-off (after its claim)."""
    return explorer.Actor('drop', world.drop_hand_off)


def nova_manage_heal(world):
    """``nova-cell0-rebuild-manage heal``: its return code."""
    commands = manage.Cell0Commands(context=world.admin_context,
                                    out=io.StringIO())
    return commands.heal()


def clock(world):
    return explorer.Actor('clock', world.advance_clock)


def delete(world):
    return explorer.Actor('delete', lambda: _call(
        world, 'delete', world.api, 'DELETE', _server(world),
        write=('delete', None)))


def rename(world):
    return explorer.Actor('rename', lambda: _call(
        world, 'rename', world.api_b, 'PUT', _server(world),
        {'server': {'name': 'renamed', 'description': 'edited'}},
        write=('name', 'renamed')))


def metadata(world):
    return explorer.Actor('metadata', lambda: _call(
        world, 'metadata', world.api, 'POST', _server(world) + '/metadata',
        {'metadata': {'added': 'yes'}}, write=('metadata', 'added')))


def tags(world):
    return explorer.Actor('tags', lambda: _call(
        world, 'tags', world.api, 'PUT', _server(world) + '/tags/added',
        write=('tag', 'added')))


def lock(world):
    return explorer.Actor('lock', lambda: _call(
        world, 'lock', world.admin_api, 'POST', _server(world) + '/action',
        {'lock': {'locked_reason': 'explorer'}},
        write=('lock', 'explorer'), microversion=LOCK_VERSION))


def unlock(world):
    return explorer.Actor('unlock', lambda: _call(
        world, 'unlock', world.admin_api_b, 'POST',
        _server(world) + '/action', {'unlock': None},
        write=('lock', None)))


def reset_state(world):
    return explorer.Actor('reset_state', lambda: _call(
        world, 'reset_state', world.admin_api, 'POST',
        _server(world) + '/action', {'os-resetState': {'state': 'error'}},
        write=('reset_state', 'error')))


def no_room(world):
    """The compute is disabled: the conductor buries the server again."""
    def run():
        service = world.admin_api.get_services(
            binary='nova-compute', host='host1')[0]
        return _call(world, 'no_room', world.admin_api, 'PUT',
                     '/os-services/%s' % service['id'],
                     {'status': 'disabled'})
    return explorer.Actor('no_room', run)


def purge(world):
    return explorer.Actor('purge', lambda: purge_ops.purge(
        world.admin_context))


def archive(world):
    def run():
        return nova_manage.DbCommands().archive_deleted_rows(
            max_rows=1000, until_complete=True, all_cells=True)
    return explorer.Actor('archive', run)


#: Every actor, by name, in the order schedules number them.
ACTORS = {
    'rebuild_a': rebuild('rebuild_a', 'a'),
    'rebuild_b': rebuild('rebuild_b', 'b'),
    'heal_a': heal_after_lease('heal_a', via_cli=False),
    'heal_b': heal_after_lease('heal_b', via_cli=True),
    'heal_late': heal_late,
    'drop': drop,
    'clock': clock,
    'delete': delete,
    'rename': rename,
    'metadata': metadata,
    'tags': tags,
    'lock': lock,
    'unlock': unlock,
    'reset_state': reset_state,
    'no_room': no_room,
    'purge': purge,
    'archive': archive,
}
#: And the pending service's, whose world has a wait (harness.World.pending):
#: not in :data:`ACTORS`, which test_pairs and test_triples pair in a world
#: without one.
ALL_ACTORS = dict(ACTORS, **pending_actors.ACTORS)


def build(names):
    """The actor builders of *names*, in that order."""
    return [ALL_ACTORS[name] for name in names]
