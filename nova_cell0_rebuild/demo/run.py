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

"""Run the demo: Nova in this process, the scenario, the summary, serving.

Imported by :mod:`.main` once the command line is checked and eventlet has
patched the standard library: it imports Nova.
"""

import signal
import sys
import tempfile
import time

from nova import version as nova_version
from oslo_config import cfg
import oslo_messaging

from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.demo import clients
try:
    from nova_cell0_rebuild.demo import cloud
except ImportError as exc:
    # Nova's test fixtures need packages nova itself does not require.
    cloud = None
    _MISSING = exc
from nova_cell0_rebuild.demo import command_line
from nova_cell0_rebuild.demo import reaper
from nova_cell0_rebuild.demo import sandbox
from nova_cell0_rebuild.demo import scenario
from nova_cell0_rebuild.demo import state
from nova_cell0_rebuild.demo import waiting
from nova_cell0_rebuild import exception

CONF = cfg.CONF

_TMPDIR = tempfile.gettempdir()


class Timeline(object):
    """Prints one line per event, in seconds since the demo started."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.started = time.monotonic()

    def say(self, actor, message):
        print('%7.2fs  %-11s  %s' % (time.monotonic() - self.started,
                                     actor, message),
              file=self.out, flush=True)


def print_summary(steps, out=None):
    """The summary table: step, expected, observed, ok."""
    out = out or sys.stdout
    rows = [('step', 'expected', 'observed', 'ok')] + [
        (s.name, s.expected, s.observed, 'ok' if s.ok else 'FAILED')
        for s in steps]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    print(file=out)
    for row in rows:
        print('  '.join(cell.ljust(width) for cell, width
                        in zip(row, widths + [0])).rstrip(), file=out)
    print(file=out, flush=True)


def play(nova, endpoint, transport, timeline):
    """Run the reaper and the scenario; returns the summary steps."""
    microversion = microversion_settings.effective_min_microversion(CONF)
    topics = CONF.notifications.versioned_notifications_topics
    the_reaper = reaper.Reaper(
        compute=clients.admin_compute(endpoint, microversion),
        placement=clients.placement(*nova.placement_endpoint()),
        microversion=microversion, report=timeline.say)
    listener = reaper.listen(transport, the_reaper, topics)
    timeline.say('reaper', 'listening for %s on %s; pre-emptible projects: '
                 '%s' % (reaper.BUILD_ERROR, ', '.join(topics),
                         ', '.join(sorted(reaper.PREEMPTIBLE_PROJECTS))))
    try:
        steps = scenario.PreemptibleScenario(
            endpoint, nova, the_reaper, microversion, timeline.say).run()
    finally:
        listener.stop()
        listener.wait()
        timeline.say('reaper', 'stopped')
    if all(step.ok for step in steps):
        steps += wait_for_room(nova, endpoint, microversion, timeline)
    return steps


def wait_for_room(nova, endpoint, microversion, timeline):
    """The automatic path: the pending service, no reaper."""
    pending = waiting.PendingService(CONF)
    timeline.say('pending', 'nova-cell0-rebuild-pending started (%s): '
                 'listening for room freed on %s; projects that may wait: '
                 '%s' % ('dispatching' if pending.service.leading
                         else 'standing by',
                         ', '.join(CONF.notifications
                                   .versioned_notifications_topics),
                         ', '.join(CONF.cell0_rebuild_pending.projects)))
    try:
        return waiting.WaitingScenario(
            endpoint, nova, clients.placement(*nova.placement_endpoint()),
            microversion, timeline.say).run()
    finally:
        pending.stop()
        timeline.say('pending', 'stopped')


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


def serve(server, seconds, image_id, timeline, config_file):
    """Keep serving until interrupted or for *seconds*.

    :param config_file: the configuration file of the sandbox's databases,
        for the operator commands.
    """
    endpoint = server.endpoint
    microversion = microversion_settings.effective_min_microversion(CONF)
    print(SERVING % {'endpoint': endpoint, 'mv': microversion,
                     'auth_url': server.auth_url, 'image': image_id,
                     'conf': config_file},
          flush=True)
    timeline.say('sandbox', 'configuration for nova-cell0-rebuild-manage '
                 'and -status: %s' % config_file)
    timeline.say('sandbox', 'serving: %s' % endpoint)
    deadline = None if seconds is None else time.monotonic() + seconds
    # A service manager stops it with SIGTERM: same clean stop as Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    timeline.say('sandbox', 'stopped serving')


SERVING = """\
Nova's compute API, with the cell0_rebuild filter, is at %(endpoint)s
SANDBOX, NOT A DEPLOYMENT: no Keystone, a request is whoever its headers
say: X-Project-Id (default: sandbox), X-User-Id (default: <project>-user),
X-Roles (default: member,reader). It is the cloud's admin only when it asks
with X-Roles: admin,member,reader. Loopback only.
  openstack --os-auth-type none --os-endpoint %(endpoint)s \\
      --os-compute-api-version %(mv)s --os-identity-api-version 3 \\
      server list
  python: openstack.connect(auth_type='none', compute_api_version='%(mv)s',
            compute_endpoint_override='%(endpoint)s')
  curl -H 'X-Project-Id: science' -H 'OpenStack-API-Version: compute %(mv)s' \\
      %(endpoint)s/servers
  curl -H 'X-Roles: admin,member,reader' \\
      -H 'OpenStack-API-Version: compute %(mv)s' \\
      '%(endpoint)s/servers?all_tenants=1'
Stock clients log in to a Keystone stand-in at %(auth_url)s (any password):
user reaper is the reaper (roles service,admin in project service), user
admin the admin, anyone else a member of sandbox; headers still win.
  openstack --os-auth-url %(auth_url)s --os-username reaper \\
      --os-password sandbox --os-project-name service \\
      --os-user-domain-id default --os-project-domain-id default \\
      --os-compute-api-version 2.65 server list --all-projects
  (nova takes the same options.)
Image of the demo's servers, for yours too: %(image)s
The operator commands act on the sandbox's databases (SQLite files) with
its configuration file, while it serves:
  nova-cell0-rebuild-manage --config-file %(conf)s list
  nova-cell0-rebuild-status --config-file %(conf)s upgrade check
  (show, heal, purge, db version too; rebuild through the API.)
Ctrl-C stops it.
"""


def _keep_log(nova, path, timeline):
    if path is None:
        # Not tempfile's default directory: the harness points it at one
        # of its own, removed when the cloud stops.
        with tempfile.NamedTemporaryFile(
                'w', prefix='nova-cell0-rebuild-demo-', suffix='.log',
                dir=_TMPDIR, delete=False) as log:
            path = log.name
    with open(path, 'w') as log:
        log.write(nova.nova_log())
    timeline.say('demo', "Nova's log: %s" % path)


def check_min_microversion(value):
    """The bound only the installed Nova knows: a usage error if beyond it.

    :raises: SystemExit(2) after printing the usage error.
    """
    try:
        microversion_settings.check_min_microversion(value)
    except exception.InvalidConfiguration as exc:
        command_line.usage_error('argument --min-microversion: %s' % exc)


def run(args, listening, sandbox_state=None):
    """Start Nova, play the scenario, serve if asked, stop.

    :param args: the checked command line (:mod:`.command_line`).
    :param listening: the sandbox's socket, from :func:`.loopback.listen`.
    :param sandbox_state: with ``--serve``, a :class:`.state.SandboxState`
        whose files hold Nova's databases; None keeps them in memory.
    :returns: the exit status.
    """
    if cloud is None:
        print("nova-cell0-rebuild-demo: Nova's functional-test fixtures "
              "cannot be imported (%s); install the demo extra: pip install "
              "'nova-cell0-rebuild[demo]'" % _MISSING, file=sys.stderr)
        return 2
    if args.min_microversion:
        check_min_microversion(args.min_microversion)
    server = sandbox.SandboxServer(listening)
    timeline = Timeline()
    timeline.say('cloud', 'starting Nova %s in this process, from its '
                 'functional-test fixtures' % nova_version.version_string())
    plugin_options = ({'min_microversion': args.min_microversion}
                      if args.min_microversion else {})
    if sandbox_state is not None:
        sandbox_state.create_databases()
        timeline.say('cloud', "Nova's databases: SQLite files in %s"
                     % sandbox_state.directory)
    nova = cloud.InProcessNova(plugin_options, state=sandbox_state)
    nova.start()
    transport = oslo_messaging.get_notification_transport(CONF)
    steps = []
    failure = None
    min_version = microversion_settings.effective_min_microversion(CONF)
    try:
        server.serve(nova.wsgi_app, nova.glance)
        timeline.say('cloud', 'ready: nova-api at %s (paste pipeline with '
                     'cell0_rebuild, min_microversion %s), placement, '
                     'scheduler, conductor, compute %s (%s: %d VCPUs)' % (
                         server.endpoint, min_version,
                         nova.compute_host, nova.compute_driver.__name__,
                         nova.compute_driver.vcpus))
        steps = play(nova, server.endpoint, transport, timeline)
        print_summary(steps)
        if args.serve:
            config_file = state.write_config(
                sandbox_state, CONF.wsgi.api_paste_config, plugin_options)
            serve(server, args.serve_seconds, nova.image_id, timeline,
                  config_file)
    except KeyboardInterrupt:
        timeline.say('demo', 'interrupted')
        steps = []
    except Exception as exc:
        failure = 'the demo failed: %s' % _one_line(exc)
        steps = []
    finally:
        server.stop()
        ok = bool(steps) and all(step.ok for step in steps)
        if args.log_file or not ok:
            try:
                _keep_log(nova, args.log_file, timeline)
            except OSError as exc:
                failure = failure or ("cannot write Nova's log to %s: %s"
                                      % (args.log_file, exc.strerror or exc))
        errors = nova.stop()
        transport.cleanup()
        for error in errors:
            timeline.say('cloud', 'while stopping: %s' % error)
        timeline.say('cloud', 'stopped')
    if failure:
        # After Nova stopped: its fixtures no longer capture stderr.
        print('%s: error: %s' % (command_line.PROG, failure),
              file=sys.stderr, flush=True)
        return 1
    return 0 if ok and not errors else 1


def _one_line(exc):
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
