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

"""The [cell0_rebuild_pending] option group: servers that wait for room.

nova-api reads ``enabled``, ``projects`` and ``max_wait_seconds`` (the
opt-in at create and the ``wait`` view of the rebuildability API), so they
are registered with the plugin's other options and must be the same on
every nova-api node and on ``nova-cell0-rebuild-pending``; the other options
are read by that service only. See the spec
``doc/source/contributor/specs/pending.rst``.
"""

from oslo_config import cfg

GROUP_NAME = 'cell0_rebuild_pending'

#: The value of ``projects`` that lets every project wait.
ALL_PROJECTS = '*'

cell0_rebuild_pending_group = cfg.OptGroup(
    GROUP_NAME,
    title='Waiting for room options',
    help="""
Options of waits: a server Nova buried in cell0 because no host had room,
whose user opted it in (the ``cell0_rebuild:wait`` metadata key at create,
or ``PUT /os-cell0-rebuild/servers/{server_id}/wait`` while buried), waits
and is rebuilt from cell0 by ``nova-cell0-rebuild-pending`` when capacity
is freed, until its deadline.

``enabled``, ``projects`` and ``max_wait_seconds`` are read by nova-api as
well as by the service: set them the same everywhere, or a wait accepted by
one node is refused or served differently by another.
""")

ALL_OPTS = [
    cfg.BoolOpt(
        'enabled',
        default=False,
        help="""
Whether servers may wait for room and be rebuilt automatically.

While false (the default), nova-api records no opt-in (a create with the
``cell0_rebuild:wait`` key is still created exactly as without it), ``PUT
.../wait`` answers 409, and ``nova-cell0-rebuild-pending`` refuses to start.
Off by default because the service rebuilds servers with a service user's
credentials: an operator decides to run it.
"""),
    cfg.ListOpt(
        'projects',
        default=[ALL_PROJECTS],
        help="""
The project ids whose servers may wait; ``*`` lets every project wait.

Checked at opt-in and again at every pass of the service, so removing a
project stops its rebuilds at once, without touching its waits. The policy
``cell0_rebuild:cell0_servers:wait`` decides who in an enabled project may
opt in; this list decides which projects may: a policy cannot name
projects without a rule per project, and the service has no user token to
check a rule with when it rebuilds.
"""),
    cfg.IntOpt(
        'max_wait_seconds',
        default=604800,
        min=60,
        max=7776000,
        help="""
The longest a server waits after its burial, in seconds (default one week,
at most 90 days).

A deadline later than this after the burial is clamped to it, and the
server's ``last_reason`` says so. It bounds how long a buried server, which
holds its quota but no host, can keep the service asking placement for
room.
"""),
    cfg.FloatOpt(
        'backoff_initial_seconds',
        default=1.0,
        min=0.1,
        max=60,
        help="""
Seconds before a server is tried again after an attempt that failed (the
scheduler refused it, or it was buried again).

The wait doubles with each failed attempt up to ``backoff_max_seconds``.
A failed attempt means placement's answer was not the whole truth (filters
placement does not know of, a race with another create); backing off keeps
one such server from taking every freed slot in turn.
"""),
    cfg.IntOpt(
        'backoff_max_seconds',
        default=300,
        min=1,
        max=3600,
        help="""
The longest back-off between two failed attempts of a server, in seconds.

Keep it below ``sweep_interval_seconds`` or so, so that a server whose
failures were bad luck is tried again within a pass or two.
"""),
    cfg.IntOpt(
        'sweep_interval_seconds',
        default=300,
        min=10,
        max=86400,
        help="""
Seconds between two periodic full passes, which also sweep: take in burials
whose notification was missed, end waits past their deadline and forget
servers no longer in cell0.

Events trigger passes as capacity is freed; this bounds how late a lost
event or a missed burial is noticed. A sweep pages through every buried
server, so its cost grows with them: do not set it lower than needed.
"""),
    cfg.FloatOpt(
        'event_delay_seconds',
        default=0.2,
        min=0,
        max=10,
        help="""
Seconds events that free capacity are gathered into one pass.

Deleting many servers at once sends as many events; one pass for all of
them asks placement once per request shape instead of once per event.
Longer delays save placement queries at the cost of latency.
"""),
    cfg.IntOpt(
        'late_event_recheck_seconds',
        default=10,
        min=1,
        max=600,
        help="""
Seconds after an event that Nova sends before placement is updated (the
end of a resize confirm or of a live migration) before a second pass.

The first pass may not yet see the freed capacity in placement; the second
does, once Nova removed the old allocation. Raise it if computes are slow
to delete allocations after a move.
"""),
    cfg.IntOpt(
        'max_in_flight',
        default=10,
        min=1,
        max=1000,
        help="""
The most rebuilds the service has dispatched and not yet seen settled.

A dispatched rebuild holds its room in placement only once the scheduler
picked a host; until then a pass could give the same room to another
server. Limiting rebuilds in flight bounds that over-commitment and the
load the service puts on the scheduler at once.
"""),
    cfg.IntOpt(
        'settle_timeout_seconds',
        default=120,
        min=10,
        max=3600,
        help="""
Seconds a dispatched rebuild counts as in flight at most, and how long a
copy of the service that died holds its dispatched servers before another
copy settles them by looking where each server is.

Keep it above the time a rebuild takes to reach a host or be buried again
on your cloud.
"""),
    cfg.IntOpt(
        'reserve_after_seconds',
        default=900,
        min=0,
        max=604800,
        help="""
Seconds a server must have waited before, as the oldest such server, it
reserves freed capacity: while its shape does not fit, passes dispatch
nothing, so the capacity freed meanwhile accumulates for it.

Without it, a large server waits behind a stream of small ones that always
fit first. A reservation holds back only the service's rebuilds, never
users' creates. 0 turns reservations off.
"""),
    cfg.IntOpt(
        'reserve_for_seconds',
        default=300,
        min=10,
        max=86400,
        help="""
The longest a reservation lasts, in seconds; then as long without any
reservation before one starts again.

It bounds what a server that may never fit costs the others: at most half
of the time.
"""),
    cfg.IntOpt(
        'shape_ttl_seconds',
        default=3600,
        min=60,
        max=86400,
        help="""
Seconds after which a stored request shape (what a server asks placement
for) is computed again.

A port's QoS policy or a host aggregate can change while a server waits;
this bounds how long a stale shape is used. A wrong shape that claims to
fit costs one failed attempt and its back-off.
"""),
    cfg.StrOpt(
        'listener_pool',
        default='nova-cell0-rebuild-pending',
        help="""
The oslo.messaging pool the service listens to Nova's versioned
notifications in.

A pool gets its own copy of every notification, so the service takes none
away from other consumers (the Aardvark relay listens in a pool of its
own). Only the active copy of the service listens; the pool's queue keeps
events across a failover. Change it only if another consumer already uses
this name.
"""),
    cfg.StrOpt(
        'coordination_url',
        secret=True,
        help="""
The tooz backend URL copies of the service elect their active copy through
(for example ``redis://host:6379``, ``etcd3+http://host:2379``,
``kazoo://host:2181``, ``mysql://user:password@host/db``).

Unset: one copy only; a second copy finds the active copy's heartbeat
fresh in the database and refuses to start. Set it to run standby copies
for availability; the database's epoch keeps a copy that lost the election
from dispatching.
"""),
]


def register_opts(conf):
    """Register the [cell0_rebuild_pending] options on the given ConfigOpts."""
    conf.register_group(cell0_rebuild_pending_group)
    conf.register_opts(ALL_OPTS, group=cell0_rebuild_pending_group)


def list_opts():
    return {cell0_rebuild_pending_group: ALL_OPTS}
