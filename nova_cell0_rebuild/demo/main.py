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

"""``nova-cell0-rebuild-demo``: pre-emptible servers on an in-process Nova.
"""

import argparse
import signal
import sys
import tempfile
import time

from nova import version as nova_version
from oslo_config import cfg
import oslo_messaging

from nova_cell0_rebuild.api import rebuild as rebuild_flow
from nova_cell0_rebuild.demo import clients
try:
    from nova_cell0_rebuild.demo import cloud
except ImportError as exc:
    # Nova's test fixtures need packages nova itself does not require.
    cloud = None
    _MISSING = exc
from nova_cell0_rebuild.demo import reaper
from nova_cell0_rebuild.demo import sandbox
from nova_cell0_rebuild.demo import scenario

CONF = cfg.CONF

DEFAULT_SERVE = '127.0.0.1:8774'
_TMPDIR = tempfile.gettempdir()

DESCRIPTION = """\
Show the pre-emptible loop on a real Nova 34 running in this process with
the nova-cell0-rebuild filter: pre-emptible servers fill the compute, a
server of another project fails to schedule and is buried in cell0, a small
reaper reacts to Nova's versioned notification
compute_task.build_instances.error, deletes enough pre-emptible servers and
rebuilds the buried server from cell0, which becomes ACTIVE with its
original UUID. A server created with personality files is refused (409).
Prints a timeline and a summary; exits 1 if anything deviated."""

EPILOG = """\
how it runs:
  Nova is assembled with Nova's own functional-test fixtures, shipped in
  the nova package (the nova.test.TestCase machinery: SQLite databases for
  the API, cell0 and cell1, the fake oslo.messaging bus, placement, stub
  Neutron and Glance), with nova-api's real paste pipeline from
  etc/nova-cell0-rebuild/api-paste.ini and Nova's real scheduler, conductor
  and one compute (fake virt driver: 2 VCPUs; m1.tiny servers take 1).
  This is how the project's functional tests run Nova: a demo and a
  sandbox, not a deployment. Nothing leaves loopback.

  It needs the demo extra: pip install 'nova-cell0-rebuild[demo]'.
  The reaper runs during the scenario only.

--serve is a SANDBOX, NEVER A DEPLOYMENT:
  there is no Keystone; each request is whoever its headers say
  (X-User-Id, X-Project-Id, X-Roles; default: admin), so it binds to
  127.0.0.0/8 or ::1 only and refuses any other address.

exit status: 0 when every step went as expected, 1 when one did not,
  2 for a usage error or a missing requirement.
"""


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


def _bind(value):
    try:
        return sandbox.parse_bind(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='nova-cell0-rebuild-demo', description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        '--serve', metavar='HOST:PORT', nargs='?', type=_bind,
        const=DEFAULT_SERVE,
        help='after the scenario, keep serving the compute API (with the '
             'filter) over HTTP on this loopback address until interrupted '
             '(default %s; port 0 picks a free one). Without it the API '
             'listens on a free loopback port during the scenario only.'
             % DEFAULT_SERVE)
    parser.add_argument(
        '--serve-seconds', metavar='N', type=float,
        help='with --serve, stop serving after N seconds.')
    parser.add_argument(
        '--min-microversion', metavar='X.Y',
        help="the plugin's [cell0_rebuild] min_microversion, which the "
             "reaper rebuilds at (default: the plugin's default, the "
             "maximum of the installed Nova, 2.104 on Nova 34; "
             "CERN's Aardvark sends 2.65).")
    parser.add_argument(
        '--log-file', metavar='PATH',
        help="write what Nova logged to PATH at the end (on a failure it "
             "is written to a temporary file anyway).")
    args = parser.parse_args(argv)
    if args.serve_seconds is not None and not args.serve:
        parser.error('--serve-seconds needs --serve')
    return args


def play(nova, endpoint, transport, timeline):
    """Run the reaper and the scenario; returns the summary steps."""
    microversion = rebuild_flow.effective_min_microversion(CONF)
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
        return scenario.PreemptibleScenario(
            endpoint, nova, the_reaper, microversion, timeline.say).run()
    finally:
        listener.stop()
        listener.wait()
        timeline.say('reaper', 'stopped')


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


def serve(server, seconds, timeline):
    """Keep serving until interrupted or for *seconds*."""
    endpoint = server.endpoint
    microversion = rebuild_flow.effective_min_microversion(CONF)
    print(SERVING % {'endpoint': endpoint, 'mv': microversion}, flush=True)
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
say (X-User-Id, X-Project-Id, X-Roles; default: admin). Loopback only.
  openstack --os-auth-type none --os-endpoint %(endpoint)s \\
      --os-compute-api-version %(mv)s --os-identity-api-version 3 \\
      server list --all-projects
  python: openstack.connect(auth_type='none', compute_api_version='%(mv)s',
            compute_endpoint_override='%(endpoint)s')
  curl -H 'X-Project-Id: science' -H 'OpenStack-API-Version: compute %(mv)s' \\
      %(endpoint)s/servers
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


def main(argv=None):
    args = parse_args(argv)
    if cloud is None:
        print("nova-cell0-rebuild-demo: Nova's functional-test fixtures "
              "cannot be imported (%s); install the demo extra: pip install "
              "'nova-cell0-rebuild[demo]'" % _MISSING, file=sys.stderr)
        return 2
    server = sandbox.SandboxServer(*(args.serve or ('127.0.0.1', 0)))
    try:
        server.bind()
    except OSError as exc:
        print('nova-cell0-rebuild-demo: cannot listen on %s:%d: %s'
              % (server.host, server.port, exc), file=sys.stderr)
        return 2
    timeline = Timeline()
    timeline.say('cloud', 'starting Nova %s in this process, from its '
                 'functional-test fixtures' % nova_version.version_string())
    nova = cloud.InProcessNova(
        {'min_microversion': args.min_microversion}
        if args.min_microversion else None)
    nova.start()
    transport = oslo_messaging.get_notification_transport(CONF)
    steps = []
    try:
        server.serve(nova.wsgi_app)
        timeline.say('cloud', 'ready: nova-api at %s (paste pipeline with '
                     'cell0_rebuild, min_microversion %s), placement, '
                     'scheduler, conductor, compute %s (%s: %d VCPUs)' % (
                         server.endpoint,
                         rebuild_flow.effective_min_microversion(CONF),
                         nova.compute_host, nova.compute_driver.__name__,
                         nova.compute_driver.vcpus))
        steps = play(nova, server.endpoint, transport, timeline)
        print_summary(steps)
        if args.serve:
            serve(server, args.serve_seconds, timeline)
    except KeyboardInterrupt:
        timeline.say('demo', 'interrupted')
        steps = []
    finally:
        server.stop()
        ok = bool(steps) and all(step.ok for step in steps)
        if args.log_file or not ok:
            _keep_log(nova, args.log_file, timeline)
        errors = nova.stop()
        transport.cleanup()
        for error in errors:
            timeline.say('cloud', 'while stopping: %s' % error)
        timeline.say('cloud', 'stopped')
    return 0 if ok and not errors else 1


if __name__ == '__main__':
    sys.exit(main())
