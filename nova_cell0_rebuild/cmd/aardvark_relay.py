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

"""nova-cell0-rebuild-aardvark-relay: Nova's burials in cell0, for Aardvark.

An optional service for clouds that run CERN's Aardvark reaper on an
unpatched Nova: it listens for Nova's ``compute_task.build_instances.error``
of a server buried in cell0 after NoValidHost and publishes the events that
the Aardvark version named in ``[cell0_rebuild_relay] aardvark_events``
waits for, for servers a rebuild from cell0 would accept (see
:mod:`nova_cell0_rebuild.relay`).

Reads the same configuration files as nova-manage (``--config-file``,
``--config-dir``; default ``/etc/nova/nova.conf``) and logs through
oslo.log as Nova's services do. Runs until SIGTERM or SIGINT, then finishes
the notifications in hand. Exit codes: 0 stopped by a signal; 1 a
configuration that cannot be used (one line on stderr); 2 a configuration
file named on the command line is missing.
"""

import sys

from nova import context as nova_context
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild.cmd import startup
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.conf import cell0_rebuild_relay as relay_conf
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates as gates_loader
from nova_cell0_rebuild.relay import burials
from nova_cell0_rebuild.relay import ledger as relay_ledger
from nova_cell0_rebuild.relay import listener

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

PROG = 'nova-cell0-rebuild-aardvark-relay'

SUCCESS, ERROR, USAGE = 0, 1, 2

#: What ``--help`` says the relay does, after the usage.
DESCRIPTION = """\
Relay Nova's burials in cell0 to CERN's Aardvark reaper: listen for Nova's
versioned notification compute_task.build_instances.error of a server
buried in cell0 after NoValidHost and, for a server a rebuild from cell0
would accept, publish the events the Aardvark version named in
[cell0_rebuild_relay] aardvark_events waits for. Reads the same
configuration files as nova-manage; runs until SIGTERM or SIGINT. Exit
status: 0 stopped by a signal, 1 a configuration that cannot be used, 2 a
configuration file named on the command line is missing."""


class _Unusable(Exception):
    """The configuration parses but the relay cannot run with it."""


def _fail(code, message):
    print('%s: error: %s' % (PROG, message), file=sys.stderr)
    return code


def build_relay(conf, context_factory=None):
    """The relay as *conf* describes it, not started.

    :param context_factory: returns the admin context each burial is
        judged with (default: Nova's admin context).
    :raises: _Unusable with one line saying what is wrong.
    """
    options = conf.cell0_rebuild_relay
    try:
        version = options.aardvark_events
        topics = options.publish_topics
        delay = options.state_update_delay
        lease = options.announce_lease_seconds
    except (cfg.ConfigFileValueError, cfg.ConfigSourceValueError) as exc:
        raise _Unusable(startup.one_line(exc))
    if version is None:
        raise _Unusable('[%s] aardvark_events is not set: set it to %s or '
                        '%s, the Aardvark branch you run'
                        % (relay_conf.GROUP_NAME, relay_conf.ALL_IN_ONE,
                           relay_conf.MASTER))
    if not topics:
        raise _Unusable('[%s] publish_topics is empty'
                        % relay_conf.GROUP_NAME)
    try:
        gates = gates_loader.load_gates(conf)
        transport = oslo_messaging.get_notification_transport(conf)
        publish = transport
        if options.publish_transport_url:
            publish = oslo_messaging.get_notification_transport(
                conf, url=options.publish_transport_url)
    except (exception.GateLoadError, oslo_messaging.InvalidTransportURL,
            oslo_messaging.DriverLoadFailure) as exc:
        raise _Unusable(startup.one_line(exc))
    context_factory = context_factory or nova_context.get_admin_context

    def judge(notice):
        return burials.judge(context_factory(), gates, notice)

    announcer = listener.Announcer(
        listener.notifier(publish, topics, conf.host), version, delay)
    ledger = relay_ledger.Ledger(context_factory, lease,
                                 relay_ledger.relay_owner(conf.host))
    return listener.Relay(transport,
                          nova_notifications.versioned_topics(conf),
                          listener.BurialEndpoint(judge, announcer,
                                                  ledger=ledger),
                          options.listener_pool,
                          transports={transport, publish})


def run_until_signalled(relay, stopping=None):
    """Start the relay; stop it on SIGTERM or SIGINT (or *stopping* set)."""
    stopping = startup.stop_on_signals(stopping)
    relay.start()
    LOG.info('%s started', PROG)
    # A timeout, so that the main thread runs the signal handlers.
    while not stopping.wait(1):
        pass
    relay.stop()
    LOG.info('%s stopped', PROG)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    plugin_conf.register_opts(CONF)
    relay_conf.register_opts(CONF)
    try:
        startup.start_service(argv, PROG, DESCRIPTION)
    except startup.ConfigurationError as exc:
        return _fail(USAGE if exc.missing else ERROR, exc)
    try:
        relay = build_relay(CONF)
    except _Unusable as exc:
        return _fail(ERROR, exc)
    run_until_signalled(relay)
    return SUCCESS
