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

"""The [cell0_rebuild] option group."""

from oslo_config import cfg

GROUP_NAME = 'cell0_rebuild'

#: The gates shipped with the plugin, in the order they run by default.
GATE_NAMES = ('state', 'lock', 'fault', 'record', 'personality', 'quota')

cell0_rebuild_group = cfg.OptGroup(
    GROUP_NAME,
    title='Rebuild from cell0 options',
    help="""
Options for the nova-cell0-rebuild paste filter, which lets a server that
Nova buried in cell0 after a failed create be rebuilt, so that it is
scheduled again and keeps its UUID.
""")

ALL_OPTS = [
    cfg.StrOpt(
        'min_microversion',
        sample_default='<the maximum microversion of the installed Nova>',
        help="""
The lowest compute API microversion at which a rebuild of a server in cell0
is handled by this plugin instead of Nova.

By default, the maximum microversion of the installed Nova: 2.104 on Nova 34
(2026.2), 2.103 on Nova 33, 2.100 on Nova 31 and 32, 2.96 on Nova 29 and 30.
Requests below this microversion reach Nova unchanged, so their rebuild of a
server in cell0 gets Nova's own 409 response. Nova answers such a rebuild
with 409 at every microversion, so the plugin changes no answer that Nova
would have carried out. The value must be between 2.57 (the first
microversion without personality files in rebuild) and the maximum
microversion of the installed Nova; nova-api refuses to load the filter
otherwise.

Set it explicitly in production, to what your reaper sends (for example 2.65
for CERN's Aardvark): left unset, it moves with Nova's maximum when Nova is
upgraded, and a reaper pinned to the old maximum is then answered by Nova.
"""),
    cfg.StrOpt(
        'reaper_min_microversion',
        default='2.57',
        help="""
The lowest compute API microversion at which a caller that holds the policy
rule ``cell0_rebuild:servers:rebuild_from_cell0:reaper`` (by default the
``service`` role) rebuilds a server in cell0 below ``min_microversion``.

A reaper's client may not send the newest microversions (Aardvark sends
2.65, the nova CLI of python-novaclient 18 at most 2.96; the openstack CLI
and openstacksdk send an explicit 2.104 as given, but at most 2.100 when
none is given), so a reaper rebuilds at the microversion its client sends,
while every other
caller below ``min_microversion`` keeps Nova's own answer. On this path a
server that is not in cell0 (for example one a previous rebuild already
moved out of it) is refused with 409 and never passed to Nova, so a retry
never re-images a server that landed. The value must be between 2.57 and
the effective ``min_microversion``; nova-api refuses to load the filter
otherwise. Raise it to the microversion your reaper sends to keep older
clients of the reaper role out of the path; to turn the path off, set the
policy rule to ``!``.
"""),
    cfg.ListOpt(
        'enabled_gates',
        default=list(GATE_NAMES),
        help="""
Ordered list of eligibility gates a rebuild from cell0 must pass.

Each name is an entry point in the ``nova_cell0_rebuild.gates`` namespace.
The first gate that refuses answers the request and nothing is changed.
Built-in gates: %s. Add the name of your own gate to run it too; an unknown
name stops nova-api from loading the filter. Removing a built-in gate removes
a protection: only do it when you understand what it guards.
""" % ', '.join(GATE_NAMES)),
    cfg.BoolOpt(
        'allow_unrecorded',
        default=False,
        help="""
Allow rebuilding a server from cell0 when there is no create record for it.

Servers created before the filter was added to the API pipeline have no
create record, so the plugin cannot know whether they were created with
personality files or which networks they asked for. Enable this only once
you have checked those servers; they will be rebuilt with the networks
Neutron allocates by default.
"""),
    cfg.IntOpt(
        'move_lease_seconds',
        default=300,
        min=10,
        max=86400,
        help="""
How long, in seconds, a rebuild from cell0 holds its move without renewing
it before heal (``nova-cell0-rebuild-manage heal``, or the next rebuild of
the same server) may take the move over.

A move renews its lease at every step. The longest wait between two steps is
a call to Glance, Cinder or Neutron, so keep this well above the timeouts of
those clients in nova.conf. A shorter value lets heal finish the move of a
nova-api that died sooner; a value shorter than a slow step lets heal take
over a move that is still running. Nothing is lost then: the running move
finds its fencing token replaced at its next step and stops, and its client
gets 409. Use the same value on every nova-api node and where the manage
command runs.
"""),
    cfg.IntOpt(
        'hand_off_timeout',
        default=3600,
        min=30,
        help="""
How long, in seconds, after a rebuild from cell0 handed a server to Nova's
conductor, heal (``nova-cell0-rebuild-manage heal``) waits before it treats
the hand-off as dropped, when the server is still only a BuildRequest mapped
to no cell and no cell holds an instance row of it. Heal then releases the
server's allocation in placement and buries it in cell0 again, in ERROR
with its fault and history, where it can be rebuilt.

The hand-off is a cast to ``schedule_and_build_instances`` that nothing
retries: a conductor that fails midway (its database failing over under it,
say) leaves the server in BUILD for ever, as Nova leaves a create then.
Nothing fences a conductor that is still working on the server, so keep
this far above the longest time a conductor spends on one build before it
maps the server: ``[DEFAULT] long_rpc_timeout`` (the scheduler call) plus
the time a cast may wait in RabbitMQ while every conductor is down.
"""),
    cfg.StrOpt(
        'connection',
        secret=True,
        help="""
SQLAlchemy URL of the database that holds the plugin's tables.

By default the tables live in the Nova API database (``[api_database]
connection``), prefixed with ``cell0_rebuild_`` and versioned in their own
alembic table, so they never interfere with Nova's own migrations. Set this
only to keep them in a separate database.
"""),
    cfg.IntOpt(
        'notification_retries',
        default=1,
        min=0,
        max=10,
        help="""
How many times a ``cell0_rebuild.rebuild.*`` notification is sent again when
the notification transport fails, before it is given up and logged.

Nova's own notifier retries for ever (``[oslo_messaging_notifications]
retry = -1``), so a notification of ours would wait out a whole RabbitMQ
outage. Each retry first waits ``[oslo_messaging_rabbit]
rabbit_retry_interval`` (growing by ``rabbit_retry_backoff``). Raise it if
your reaper must not miss notifications during a broker failover; the
rebuild requests never wait for the retries (see
``notification_timeout``).
"""),
    cfg.FloatOpt(
        'notification_timeout',
        default=2.0,
        min=0.0,
        max=60.0,
        help="""
Seconds a rebuild request waits at most for one of its notifications to be
handed to the notification transport, before it carries on.

Notifications are sent in order by one sender per nova-api process; one the
request stopped waiting for is still sent, or given up after
``notification_retries``, and while the sender is held up by a notification
it waited for in vain, requests do not wait at all. 0 never waits. Lower it
if rebuild requests must answer fast even while the broker hangs; a healthy
broker takes milliseconds.
"""),
]


def register_opts(conf):
    """Register the [cell0_rebuild] options on the given ConfigOpts."""
    conf.register_group(cell0_rebuild_group)
    conf.register_opts(ALL_OPTS, group=cell0_rebuild_group)


def list_opts():
    return {cell0_rebuild_group: ALL_OPTS}
