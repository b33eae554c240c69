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

"""nova-cell0-rebuild-pending: buried servers that opted in wait for room.

Runs :class:`~nova_cell0_rebuild.pending.service.PendingService`: one copy
elected through tooz (``[cell0_rebuild_pending] coordination_url``)
listens to Nova's versioned notifications in ``listener_pool`` and
rebuilds waiting servers as room frees; other copies stand by.

A console script of its own, not a mode of the Aardvark relay
(``cmd/aardvark_relay.py``), as the spec ``pending`` decides: relays scale
out in a shared pool where any copy handles any notification, while this
service must have exactly one active dispatcher; it needs a service user,
the cell databases and Glance, Cinder and Neutron, which the relay does
not; a fault in one must not stop the other, and clouds without Aardvark
must not run the relay to get waits. They share code (``Relay``, the
start-up helpers), not a process.

Reads the same configuration files as nova-manage and logs through
oslo.log as Nova's services do. Refuses to start (one line on stderr, exit
1) when waits are not enabled, Nova sends no versioned notifications, the
plugin's tables are behind, the service user cannot authenticate, or the
election cannot even be tried (tooz backend unreachable; without a
coordination URL, another copy beats). Runs until SIGTERM or SIGINT, then
finishes what it holds and releases the tooz lock. Exit codes: 0 stopped
by a signal; 1 a configuration that cannot be used, or deposed by another
copy without a coordination URL; 2 a configuration file named on the
command line is missing.
"""

import os
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging
from oslo_messaging import opts as messaging_opts
from stevedore import exception as stevedore_exc
from tooz import coordination

from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild.adapters import nova_service_context
from nova_cell0_rebuild.cmd import startup
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.conf import cell0_rebuild_pending as pending_conf
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.pending import dispatcher as dispatcher_mod
from nova_cell0_rebuild.pending import leader
from nova_cell0_rebuild.pending import service as service_mod
from nova_cell0_rebuild.relay import listener

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

PROG = 'nova-cell0-rebuild-pending'

SUCCESS, ERROR, USAGE = 0, 1, 2

VERSIONED_FORMATS = ('versioned', 'both')

#: A coordination URL whose election cannot be tried: unknown scheme
#: (no tooz driver), backend unreachable, malformed.
_ELECTION_ERRORS = (coordination.ToozError, stevedore_exc.NoMatches,
                    ValueError)

DESCRIPTION = """\
Rebuild servers buried in cell0 that opted in to wait for room, as Nova's
versioned notifications say room was freed, and on a periodic sweep. One
copy dispatches, elected through tooz ([cell0_rebuild_pending]
coordination_url); others stand by. Reads the same configuration files as
nova-manage; runs until SIGTERM or SIGINT. Exit status: 0 stopped by a
signal, 1 a configuration that cannot be used (or deposed by another copy
without a coordination URL), 2 a configuration file named on the command
line is missing."""


#: oslo.messaging's options of the notifications Nova sends.
NOTIFICATIONS_GROUP = 'oslo_messaging_notifications'


class _Unusable(Exception):
    """The configuration parses but the service cannot run with it."""


def _fail(code, message):
    print('%s: error: %s' % (PROG, message), file=sys.stderr)
    return code


def check_ready(conf):
    """Why the service must not start, as one line; None when it may."""
    if not conf.cell0_rebuild_pending.enabled:
        return ('[%s] enabled is false: waits for room are off, nothing to '
                'serve' % pending_conf.GROUP_NAME)
    notification_format = conf.notifications.notification_format
    if notification_format not in VERSIONED_FORMATS:
        return ('[notifications] notification_format is %s: Nova sends no '
                'versioned notifications, set it to versioned or both for '
                'every Nova service' % notification_format)
    if not notification_drivers(conf):
        return ('[oslo_messaging_notifications] driver is unset or noop: '
                'Nova sends no notifications at all, set it to messagingv2 '
                'for every Nova service')
    missing = startup.missing_option(conf, PROG,
                                     (('api_database', 'connection'),))
    if missing:
        return missing
    return migration.sync_needed()


def notification_drivers(conf):
    """The notification drivers Nova's services send through, noop left
    out: none means Nova sends nothing and the service would hear nothing.

    The options are oslo.messaging's; registered here too, as a command
    line that never built a notifier has not.
    """
    for group, opts in messaging_opts.list_opts():
        if group == NOTIFICATIONS_GROUP:
            conf.register_opts(opts, group=group)
    return [driver for driver in conf[NOTIFICATIONS_GROUP].driver
            if driver != 'noop']


def build_service(conf, context, holder=None):
    """The service as *conf* describes it, elected or standing by.

    :param context: the service user's admin context.
    :raises: _Unusable with one line saying what is wrong.
    """
    holder = holder or leader.holder_of(conf.host, os.getpid())
    try:
        transport = oslo_messaging.get_notification_transport(conf)
    except (oslo_messaging.InvalidTransportURL,
            oslo_messaging.DriverLoadFailure) as exc:
        raise _Unusable(startup.one_line(exc))
    topics = nova_notifications.versioned_topics(conf)
    pool = conf.cell0_rebuild_pending.listener_pool

    def listen(endpoint):
        return listener.Relay(transport, topics, endpoint, pool)

    leadership = leader.Leadership(
        context, conf.cell0_rebuild_pending.coordination_url, holder)
    dispatcher = dispatcher_mod.Dispatcher(conf, context, holder,
                                           fence=leadership.renew)
    service = service_mod.PendingService(conf, dispatcher, leadership,
                                         listener_factory=listen)
    try:
        leadership.start()
        service.start()
    except ((leader.AnotherCopyRuns,) + _ELECTION_ERRORS
            + startup.DB_ERRORS) as exc:
        leadership.stop()
        transport.cleanup()
        raise _Unusable(_why_no_election(exc))
    return service, transport


def _why_no_election(exc):
    if isinstance(exc, leader.AnotherCopyRuns):
        return startup.one_line(exc)
    if isinstance(exc, startup.DB_ERRORS):
        # The epoch row is read and taken at the first election.
        return "the dispatcher's epoch cannot be taken: %s" % (
            startup.one_line(exc))
    return ('the election through [%s] coordination_url cannot be tried: '
            '%s' % (pending_conf.GROUP_NAME, startup.one_line(exc)))


def run_until_signalled(service, stopping=None):
    """Run the service's worker; stop it on SIGTERM or SIGINT.

    :returns: SUCCESS when stopped by a signal, ERROR when the worker
        ended by itself (deposed without a coordination URL).
    """
    stopping = startup.stop_on_signals(stopping)
    worker = threading.Thread(target=service.run, name='pending-worker')
    worker.start()
    LOG.info('%s started', PROG)
    # A timeout, so that the main thread runs the signal handlers.
    while not stopping.wait(1):
        if not worker.is_alive():
            break
    signalled = stopping.is_set()
    service.stop()
    worker.join()
    LOG.info('%s stopped', PROG)
    return SUCCESS if signalled and not service.deposed else ERROR


def main(argv=None):
    argv = sys.argv if argv is None else argv
    plugin_conf.register_opts(CONF)
    try:
        startup.start_service(argv, PROG, DESCRIPTION)
    except startup.ConfigurationError as exc:
        return _fail(USAGE if exc.missing else ERROR, exc)
    try:
        not_ready = check_ready(CONF)
    except (cfg.ConfigFileValueError, cfg.ConfigSourceValueError) as exc:
        not_ready = startup.one_line(exc)
    except startup.DB_ERRORS as exc:
        not_ready = "the plugin's tables cannot be read: %s" % (
            startup.one_line(exc))
    if not_ready:
        return _fail(ERROR, not_ready)
    try:
        context = nova_service_context.service_context(CONF)
        service, transport = build_service(CONF, context)
    except (_Unusable, exception.Cell0RebuildException) as exc:
        return _fail(ERROR, startup.one_line(exc))
    try:
        return run_until_signalled(service)
    finally:
        transport.cleanup()
