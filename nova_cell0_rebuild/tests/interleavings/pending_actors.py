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

"""The pending service's actors (issue 27, work item 9).

The world's server waits (``PUT .../wait`` before the snapshot, its shape
computed as the service's sweep does) and the epoch of the pending
service was taken by the copy ``pending_b`` (epoch 1):

* ``pending``: a new copy elected (it takes epoch 2, deposing
  ``pending_b``), then one dispatcher pass fenced by its epoch's
  heartbeat, then the settle of what it dispatched, by where the server
  is (as the service does on Nova's notifications);
* ``pending_b``: the copy that led before, with epoch 1: the same pass
  and settle, fenced by epoch 1 (deposed once ``pending`` took epoch 2);
* ``cancel``: ``DELETE /os-cell0-rebuild/servers/{id}/wait`` through the
  first API app (the filter's own code).

A pass stops at the pending service's own step points only: the epoch's
heartbeat, the wait's compare-and-swap, the settle (``step_points.
PENDING``). The rebuild it starts runs through the move's step points
(``step_points.MOVE``) in one segment: every order of a move's steps
with each other actor is explored with ``rebuild_a`` already, and a
dispatcher's move is the same code (``rebuild_as_admin``); what a pass
adds is where, among the other actors' steps, it takes the wait, moves
and settles. Each pair of a pass with a move-sized actor costs tens of
schedules instead of hundreds that way.

An exception out of a pending pass is recorded (``world.errors``) for
the ``pending error`` invariant: the service would log it and try again,
but nothing in these schedules should raise.
"""

import fixtures
from oslo_config import cfg

from nova_cell0_rebuild import objects
from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.pending import intake
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.tests import explorer
from nova_cell0_rebuild.tests.interleavings import step_points

#: The holders of the epochs, as the rows name them.
HOLDER_A = 'pending-a'
HOLDER_B = 'pending-b'

#: The deadline of the world's wait: far past anything the clock does.
DEADLINE = '1d'


def wait_url(server_id):
    return '/os-cell0-rebuild/servers/%s/wait' % server_id


def open_wait(world):
    """The world's server waits, as the API's PUT and the sweep make it.

    Called once per test before the snapshot: every schedule starts with
    a ``waiting`` row that has its shape, and epoch 1 held by pending_b.
    """
    world.flags(enabled=True, group='cell0_rebuild_pending')
    resp = world.api.api_put(wait_url(world.server_id),
                             {'wait': {'deadline': DEADLINE}},
                             check_response_status=False)
    assert resp.status == 200, (resp.status, resp.body)
    wait = objects.Cell0Wait.get_by_instance_uuid(world.admin_context,
                                                  world.server_id)
    assert intake.compute_shape(world.admin_context, wait) is not None
    world.first_epoch = objects.PendingEpoch.take(
        world.admin_context, leader.NAME, HOLDER_B)


def _fence(world, epoch):
    def still_leads():
        return objects.PendingEpoch.heartbeat(world.admin_context,
                                              leader.NAME, epoch)
    return still_leads


def _pass(world, name, holder, epoch):
    """One pass of a dispatcher, then the settle of its rebuilds."""
    dispatcher = dispatcher_mod.Dispatcher(
        cfg.CONF, world.admin_context, '%s:%d' % (holder, epoch),
        fence=_fence(world, epoch))
    try:
        report = dispatcher.run_pass()
        dispatcher.settle_in_flight()
    except Exception as exc:
        world.errors.append((name, repr(exc)))
        raise
    world.passes.append((name, report))
    return report


def pending(world):
    def run():
        epoch = objects.PendingEpoch.take(world.admin_context, leader.NAME,
                                          HOLDER_A)
        return _pass(world, 'pending', HOLDER_A, epoch)
    return explorer.Actor('pending', run, passes=step_points.MOVE)


def pending_b(world):
    def run():
        return _pass(world, 'pending_b', HOLDER_B, world.first_epoch)
    return explorer.Actor('pending_b', run, passes=step_points.MOVE)


def cancel(world):
    def run():
        resp = world.api.api_delete(wait_url(world.server_id),
                                    check_response_status=False)
        return world.record('cancel', 'DELETE %s' % wait_url(
            world.server_id), resp, write=('cancel', None))
    return explorer.Actor('cancel', run)


class WaitLog(fixtures.Fixture):
    """Keep each compare-and-swap of a wait that takes or ends it, in
    order: ``world.wait_log`` gets (``dispatch`` or ``end``, won).
    """

    _WAIT = 'nova_cell0_rebuild.objects.cell0_wait.Cell0Wait.'

    def __init__(self, world):
        super().__init__()
        self.world = world

    def _setUp(self):
        for name in ('dispatch', 'end'):
            real = getattr(objects.Cell0Wait, name)
            self.useFixture(fixtures.MonkeyPatch(
                self._WAIT + name, self._logging(name, real)))

    def _logging(self, name, real):
        world = self.world

        def logged(wait, *args, **kwargs):
            won = real(wait, *args, **kwargs)
            world.wait_log.append((name, won))
            return won
        return logged


#: The actors, by name.
ACTORS = {'pending': pending, 'pending_b': pending_b, 'cancel': cancel}


def at_rest(world):
    """What the service's next sweep does once every lease ran out: a new
    dispatcher settles the dispatched waits whose lease expired, and
    forgets the waits of servers deleted or moved out of cell0.
    """
    world.advance_clock(cfg.CONF.cell0_rebuild_pending.
                        settle_timeout_seconds + 1)
    dispatcher = dispatcher_mod.Dispatcher(cfg.CONF, world.admin_context,
                                           'at-rest')
    dispatcher.settle_expired()
    dispatcher.sweep_gone()
