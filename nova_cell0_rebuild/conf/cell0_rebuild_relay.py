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

"""The [cell0_rebuild_relay] option group: the relay for CERN's Aardvark.

Only ``nova-cell0-rebuild-aardvark-relay`` registers these options: nova-api
and the other command lines never read them.
"""

from oslo_config import cfg

GROUP_NAME = 'cell0_rebuild_relay'

#: The Aardvark branches whose events the relay can send.
ALL_IN_ONE = 'all_in_one'
MASTER = 'master'

cell0_rebuild_relay_group = cfg.OptGroup(
    GROUP_NAME,
    title='Aardvark relay options',
    help="""
Options of ``nova-cell0-rebuild-aardvark-relay``, an optional service that
lets a stock CERN Aardvark reaper work with an unpatched Nova.

Aardvark waits for notifications that only CERN's patched Nova sends. The
relay listens for Nova's own ``compute_task.build_instances.error``
notification of a server buried in cell0 after NoValidHost, and publishes
the events the chosen Aardvark version waits for, but only for servers that
a rebuild from cell0 would accept. Nova's transport and topics are read from
the same configuration files (``[DEFAULT] transport_url``,
``[oslo_messaging_notifications]``, ``[notifications]
versioned_notifications_topics``).
""")

ALL_OPTS = [
    cfg.StrOpt(
        'aardvark_events',
        choices=[
            (ALL_IN_ONE, 'The events of Aardvark\'s branch all_in_one (2018, '
                         'its default branch): instance.schedule at error '
                         'priority, then instance.update.'),
            (MASTER, 'The events of Aardvark\'s branch master (2020): '
                     'scheduler.select_destinations.error, then '
                     'instance.update.'),
        ],
        help="""
The Aardvark version to send events for.

It has no default: the two versions wait for different events and read an
empty requested destination in opposite ways, so name the branch your
Aardvark was installed from. The relay does not start while it is unset.
"""),
    cfg.ListOpt(
        'publish_topics',
        default=['cell0_rebuild_aardvark'],
        help="""
The topics the relay publishes Aardvark's events on.

Set Aardvark's ``[notification] topics`` to the same value. A topic of
their own keeps the relay's events (a ``pending`` state that Nova never
sends among them) away from other consumers of Nova's versioned
notifications, and keeps Aardvark, which listens without a pool, from
taking Nova's notifications away from other consumers that listen without
one. Set it to Nova's ``versioned_notifications`` only if Aardvark must
listen there.
"""),
    cfg.StrOpt(
        'publish_transport_url',
        secret=True,
        help="""
The transport URL the relay publishes Aardvark's events on.

By default, the transport of Nova's notifications
(``[oslo_messaging_notifications] transport_url``, else ``[DEFAULT]
transport_url``), where it also listens. Set it when Aardvark listens on
another RabbitMQ, and set Aardvark's ``[notification] urls`` to the same
URL.
"""),
    cfg.StrOpt(
        'listener_pool',
        default='nova-cell0-rebuild-aardvark-relay',
        help="""
The oslo.messaging pool the relay listens to Nova's notifications in.

A pool gets its own copy of every notification, so the relay takes none
away from other consumers of Nova's versioned notifications. Relays that
share a pool share the work: run two on different hosts with the same pool
for availability, and each burial is announced once. Change it only if
another consumer already uses this name.
"""),
    cfg.FloatOpt(
        'state_update_delay',
        default=2.0,
        min=0.0,
        max=60.0,
        help="""
Seconds between the scheduling event and the ``instance.update`` that
follows it.

Aardvark receives the two from different queues (one per priority) and
looks up the scheduling event when the update arrives, three times without
waiting; if it finds nothing, master resets the server to error and
all_in_one drops it. Raise it if Aardvark logs that it could not find the
scheduling info of a server.
"""),
    cfg.IntOpt(
        'announce_lease_seconds',
        default=120,
        min=5,
        help="""
Seconds a relay holds a burial it announces before another relay of the
pool (or this one, restarted) may announce it again.

Before announcing, the relay records the burial (the server and the
message id of Nova's notification) in the plugin's database, so that a
notification delivered again, to any relay, is not announced twice once
announced. A relay that dies while it announces leaves the record held:
the notification, delivered again, waits until this lease ran out, then is
announced by the relay that has it. Keep it well above
``state_update_delay``; a lease shorter than an announcement takes lets a
second relay announce a burial the first is still announcing.
"""),
]


def register_opts(conf):
    """Register the [cell0_rebuild_relay] options on the given ConfigOpts."""
    conf.register_group(cell0_rebuild_relay_group)
    conf.register_opts(ALL_OPTS, group=cell0_rebuild_relay_group)


def list_opts():
    return {cell0_rebuild_relay_group: ALL_OPTS}
