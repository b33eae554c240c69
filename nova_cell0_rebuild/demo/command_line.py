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

"""The demo's command line, checked before anything imports Nova.

It imports the standard library and :mod:`.loopback` only, so that
``--help`` and a usage error answer at once and patch nothing.
"""

import argparse
import re

from nova_cell0_rebuild.demo import loopback
from nova_cell0_rebuild.demo import state
from nova_cell0_rebuild import version

PROG = 'nova-cell0-rebuild-demo'
DEFAULT_SERVE = '127.0.0.1:8774'

#: The lowest [cell0_rebuild] min_microversion: the first microversion
#: whose rebuild takes no personality files. The same as
#: nova_cell0_rebuild.api.microversion_settings.LOWEST_MIN_MICROVERSION
#: (a unit test keeps them equal), which cannot be imported without Nova.
LOWEST_MIN_MICROVERSION = '2.57'

#: A compute API microversion, as the option's own regex has it.
_MICROVERSION = re.compile(r'^2\.(0|[1-9][0-9]*)$')

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
  (X-User-Id, X-Project-Id, X-Roles; default: a member of project
  sandbox; the cloud's admin only with X-Roles: admin,member,reader), so
  it binds to 127.0.0.0/8 or ::1 only and refuses any other address.
  Stock clients (openstack, nova, openstacksdk) log in to a Keystone
  stand-in at http://HOST:PORT/identity with any password: user reaper
  gets token reaper (roles service,admin in project service, the reaper
  path), user admin token admin, anyone else a member of sandbox.

operator commands against --serve:
  with --serve, Nova's databases are SQLite files (WAL mode) in the
  --state-dir, and the demo writes a configuration file there, whose path
  it prints. While it serves, nova-cell0-rebuild-manage --config-file FILE
  (list, show, heal, purge, db version, db sync) and
  nova-cell0-rebuild-status --config-file FILE upgrade check act on the
  sandbox's servers. manage rebuild is refused (no service credentials,
  nothing changes): the sandbox's conductor listens on a message bus inside
  the demo's process, so rebuild through the API instead.

exit status: 0 when every step went as expected, 1 when one did not,
  2 for a usage error, a missing requirement, an address in use or a
  --state-dir that cannot be used.
"""


def _bind(value):
    try:
        return loopback.parse_bind(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _positive_seconds(value):
    """A number of seconds above 0."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    # NaN and infinity are floats too, but no time to serve for.
    if seconds is None or not 0 < seconds < float('inf'):
        raise argparse.ArgumentTypeError(
            '%r is not a positive number of seconds' % value)
    return seconds


def _min_microversion(value):
    """``2.N``, not below the lowest the plugin takes.

    The upper bound, the installed Nova's maximum, is checked once Nova is
    imported (:func:`usage_error`).
    """
    match = _MICROVERSION.match(value)
    if not match:
        raise argparse.ArgumentTypeError(
            '%r is not a compute API microversion (2.N)' % value)
    lowest = int(LOWEST_MIN_MICROVERSION.split('.')[1])
    if int(match.group(1)) < lowest:
        raise argparse.ArgumentTypeError(
            '%s is below %s, the first microversion whose rebuild takes no '
            'personality files' % (value, LOWEST_MIN_MICROVERSION))
    return value


def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        '--version', action='version', version=version.release_string(),
        help='print the version of nova-cell0-rebuild (as pip reports it) '
             'and exit.')
    parser.add_argument(
        '--serve', metavar='HOST:PORT', nargs='?', type=_bind,
        const=DEFAULT_SERVE,
        help='after the scenario, keep serving the compute API (with the '
             'filter) over HTTP on this loopback address until interrupted '
             '(default %s; port 0 picks a free one). Without it the API '
             'listens on a free loopback port during the scenario only. '
             "With it, Nova's databases are SQLite files (see "
             '--state-dir) and the banner names a configuration file for '
             'nova-cell0-rebuild-manage and nova-cell0-rebuild-status.'
             % DEFAULT_SERVE)
    parser.add_argument(
        '--serve-seconds', metavar='N', type=_positive_seconds,
        help='with --serve, stop serving after N seconds.')
    parser.add_argument(
        '--state-dir', metavar='DIR',
        help="with --serve, keep Nova's databases (API, with the plugin's "
             "tables, cell0, cell1) in SQLite files in DIR, created if "
             "missing, with a configuration file for "
             "nova-cell0-rebuild-manage and -status, DIR/%s, all kept "
             "when the demo stops. DIR must not hold another sandbox's "
             "files. Default: a new temporary directory, removed when the "
             "demo stops." % state.CONFIG_NAME)
    parser.add_argument(
        '--min-microversion', metavar='X.Y', type=_min_microversion,
        help="the plugin's [cell0_rebuild] min_microversion, which the "
             "reaper rebuilds at, from %s to the maximum of the installed "
             "Nova (default: the plugin's default, that maximum, 2.104 on "
             "Nova 34; CERN's Aardvark sends 2.65)."
             % LOWEST_MIN_MICROVERSION)
    parser.add_argument(
        '--log-file', metavar='PATH',
        help="write what Nova logged to PATH at the end (on a failure it "
             "is written to a temporary file anyway).")
    return parser


def parse_args(argv):
    """Parse and check the command line.

    :raises: SystemExit(0) after --help; SystemExit(2) after printing a
        usage error.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.serve_seconds is not None and not args.serve:
        parser.error('--serve-seconds needs --serve')
    if args.state_dir is not None and not args.serve:
        parser.error('--state-dir needs --serve')
    return args


def usage_error(message):
    """Print a usage error found after parsing and exit with 2.

    :raises: SystemExit(2).
    """
    build_parser().error(message)
