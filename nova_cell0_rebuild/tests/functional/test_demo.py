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

"""The demo, run as users run it, and a real client against its API."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from keystoneauth1 import noauth
from keystoneauth1 import session
from nova.tests import fixtures as nova_fixtures
import openstack
import testtools

import nova_cell0_rebuild
from nova_cell0_rebuild.tests import microversions as mv

DEMO = [sys.executable, '-m', 'nova_cell0_rebuild.demo.main']
SUMMARY_ROW = re.compile(r'^(?P<step>[a-z].*?)\s{2,}(?P<expected>\S.*?)\s{2,}'
                         r'(?P<observed>\S.*?)\s{2,}(?P<ok>ok|FAILED)$')
UUID_ROW = re.compile(r'^it keeps its UUID\s+(?P<before>[0-9a-f-]{36})\s+'
                      r'(?P<after>[0-9a-f-]{36})\s+ok$', re.M)
SERVING = re.compile(r'sandbox\s+serving: (?P<endpoint>http://\S+)')


def _environment():
    # The demo prints its own output; the test runner's capture settings
    # are for this process only.
    return {k: v for k, v in os.environ.items()
            if not k.startswith('OS_') or k == 'OS_DEBUG'}


def _pbr_release():
    # What pip reports for a build (0.1.0.devN), pbr's release
    # string; read live, as an editable install's metadata may
    # be older than the last commit.
    import pbr.version
    return pbr.version.VersionInfo(
        'nova-cell0-rebuild').release_string()


class DemoTest(testtools.TestCase):
    """``nova-cell0-rebuild-demo`` end to end, in a subprocess."""

    def test_demo_plays_the_preemptible_loop(self):
        demo = subprocess.run(DEMO, capture_output=True, text=True,
                              timeout=120, env=_environment())
        output = demo.stdout
        self.assertEqual(0, demo.returncode, output + demo.stderr)
        rows = [m.groupdict() for m in map(SUMMARY_ROW.match,
                                           output.splitlines()) if m]
        self.assertEqual(
            ['fill the compute with pre-emptible servers',
             'a science create while full is buried',
             'the reaper deletes enough pre-emptible servers',
             'the reaper rebuilds it from cell0 (imageRef only)',
             'the rebuilt server is ACTIVE in a real cell',
             'it keeps its UUID',
             'a create with personality files while full is buried',
             'its rebuild from cell0 is refused',
             'the pre-emptible project fills the compute again',
             'a science create with cell0_rebuild:wait=1h while full',
             'the pending service rebuilds it by itself',
             'it keeps its UUID',
             'the science project deletes sci-1'],
            [row['step'] for row in rows[1:]], output)
        self.assertEqual({'ok'}, {row['ok'] for row in rows[1:]}, output)
        uuids = UUID_ROW.findall(output)
        self.assertEqual(2, len(uuids), output)
        for before, after in uuids:
            self.assertEqual(before, after)
        # The timeline tells the story with the reaper's own requests.
        self.assertIn('got compute_task.build_instances.error', output)
        self.assertIn('{"rebuild": {"imageRef": ', output)
        self.assertIn('-> 202 Accepted', output)
        self.assertIn('-> 409 Conflict', output)
        self.assertIn('was created with personality files', output)
        # Then the automatic path: no reaper, nobody asks for the rebuild.
        automatic = output[output.index('reaper       stopped'):]
        self.assertIn('nova-cell0-rebuild-pending started (dispatching)',
                      automatic)
        self.assertIn('nobody asks for a rebuild', automatic)
        self.assertNotIn('POST /servers/', automatic)

    def test_a_failure_is_one_line_and_nova_stops(self):
        log_file = '/nonexistent/dir/nova-cell0-rebuild-demo.log'
        demo = subprocess.run(DEMO + ['--log-file', log_file],
                              capture_output=True, text=True,
                              timeout=120, env=_environment())
        self.assertEqual(1, demo.returncode, demo.stdout + demo.stderr)
        self.assertEqual(
            "nova-cell0-rebuild-demo: error: cannot write Nova's log to "
            "%s: No such file or directory" % log_file,
            demo.stderr.strip().splitlines()[-1], demo.stderr)
        self.assertNotIn('Traceback', demo.stderr)
        # Nova was stopped cleanly, with nothing left to report.
        self.assertIn('cloud        stopped', demo.stdout)
        self.assertNotIn('while stopping', demo.stdout)

    def test_refuses_a_bind_address_other_hosts_can_reach(self):
        demo = subprocess.run(DEMO + ['--serve', '0.0.0.0:8774'],
                              capture_output=True, text=True, timeout=60,
                              env=_environment())
        self.assertEqual(2, demo.returncode)
        self.assertIn('0.0.0.0 is not a loopback address', demo.stderr)
        self.assertEqual('', demo.stdout)


class DemoCommandLineTest(testtools.TestCase):
    """What the demo says before it starts Nova: fast, one line, rc 2."""

    def _demo(self, *args, timeout=60):
        started = time.monotonic()
        demo = subprocess.run(DEMO + list(args), capture_output=True,
                              text=True, timeout=timeout, env=_environment())
        return demo, time.monotonic() - started

    def test_a_busy_port_is_an_error_before_nova_starts(self):
        # The first holder is what a first --serve used to be (eventlet's
        # listen shares the port with SO_REUSEPORT), the second any service.
        for share in (True, False):
            holder = socket.socket()
            self.addCleanup(holder.close)
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if share:
                holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            holder.bind(('127.0.0.1', 0))
            holder.listen(5)
            port = holder.getsockname()[1]
            demo, took = self._demo('--serve', '127.0.0.1:%d' % port,
                                    '--serve-seconds', '1', timeout=30)
            self.assertEqual(2, demo.returncode, demo.stdout + demo.stderr)
            self.assertEqual(
                'nova-cell0-rebuild-demo: cannot listen on 127.0.0.1:%d: '
                '[Errno 98] Address already in use\n' % port, demo.stderr)
            self.assertEqual('', demo.stdout)
            # Before Nova is even imported: well under the 4 to 20 s that
            # takes.
            self.assertLess(took, 3, 'share=%s' % share)

    def test_a_bad_min_microversion_is_a_usage_error(self):
        for value, says in (
                ('3.x', "'3.x' is not a compute API microversion (2.N)"),
                ('2.056', "'2.056' is not a compute API microversion"),
                ('2.56', '2.56 is below 2.57'),
                ('2.999', '2.999 is outside 2.57 .. %s' % mv.NOVA_MAX)):
            demo, took = self._demo('--min-microversion', value)
            self.assertEqual(2, demo.returncode, value + demo.stderr)
            self.assertEqual('', demo.stdout, value)
            self.assertNotIn('Traceback', demo.stderr, value)
            # argparse's usage, then the error on one line (2.999 is checked
            # after Nova is imported, which may warn with PYTHONWARNINGS).
            self.assertIn('usage: nova-cell0-rebuild-demo ', demo.stderr)
            error = demo.stderr.splitlines()[-1]
            self.assertTrue(error.startswith(
                'nova-cell0-rebuild-demo: error: argument '
                '--min-microversion: '), error)
            self.assertIn(says, error)

    def test_version_is_what_pip_reports(self):
        demo, took = self._demo('--version')
        self.assertEqual(
            (0, _pbr_release() + '\n', ''),
            (demo.returncode, demo.stdout, demo.stderr))

    def test_help_and_argument_errors_import_no_nova(self):
        # What --help and malformed arguments load, each in a fresh
        # interpreter: no Nova, no eventlet, nothing patched. A state
        # directory that holds another sandbox is refused before Nova too.
        used = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, used)
        open(os.path.join(used, 'api.sqlite'), 'w').close()
        for args in (['--help'], ['--version'], ['--min-microversion', '3.x'],
                     ['--min-microversion', '2.56'], ['--serve-seconds', '5'],
                     ['--serve', '10.0.0.1:80'], ['--state-dir', used],
                     ['--serve', '127.0.0.1:0', '--state-dir', used]):
            probe = subprocess.run(
                [sys.executable, '-c', _IMPORTS_PROBE] + args,
                capture_output=True, text=True, timeout=60,
                env=_environment())
            self.assertEqual(0, probe.returncode, probe.stderr)
            rc, loaded = json.loads(probe.stdout.splitlines()[-1])
            self.assertEqual((0 if args in (['--help'], ['--version'])
                              else 2, []),
                             (rc, loaded), args)

    def test_the_demo_imports_no_test_package_of_ours(self):
        # Nova's own test fixtures (nova.tests) are the nova package's; the
        # plugin's fixture is public (nova_cell0_rebuild.fixture).
        probe = subprocess.run(
            [sys.executable, '-c', _RUN_IMPORTS_PROBE], capture_output=True,
            text=True, timeout=60, env=_environment())
        self.assertEqual(0, probe.returncode, probe.stderr)
        self.assertEqual([], json.loads(probe.stdout.splitlines()[-1]))


_IMPORTS_PROBE = """
import contextlib, io, json, sys
from nova_cell0_rebuild.demo import main
with contextlib.redirect_stdout(io.StringIO()), \\
        contextlib.redirect_stderr(io.StringIO()):
    try:
        rc = main.main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
print(json.dumps([rc, sorted(name for name in sys.modules
                             if name.split('.')[0] in ('nova', 'eventlet'))]))
"""
_RUN_IMPORTS_PROBE = """
import json, sys
from nova_cell0_rebuild.demo import main
main.enter_eventlet_mode()
from nova_cell0_rebuild.demo import run
print(json.dumps(sorted(name for name in sys.modules
                        if name.startswith('nova_cell0_rebuild.tests'))))
"""


class ServedDemo(object):
    """``nova-cell0-rebuild-demo --serve`` in a subprocess, until stopped.

    Its output goes to a file, not a pipe: nobody reads a pipe while the
    demo serves, and once full it would block the demo (Nova 29 to 31 warn
    at every request).
    """

    def __init__(self, seconds=100, wait=120, args=()):
        self._log = tempfile.TemporaryFile('w+')
        self.process = subprocess.Popen(
            DEMO + ['--serve', '127.0.0.1:0', '--serve-seconds',
                    str(seconds)] + list(args),
            stdout=self._log, stderr=subprocess.STDOUT, text=True,
            env=_environment())
        self.returncode = None
        deadline = time.monotonic() + wait
        while self.process.poll() is None and time.monotonic() < deadline:
            serving = SERVING.search(self.text)
            if serving:
                #: The compute endpoint, e.g. http://127.0.0.1:8774/v2.1.
                self.endpoint = serving.group('endpoint')
                #: The sandbox's Keystone stand-in.
                self.auth_url = self.endpoint.rsplit('/', 1)[0] + '/identity'
                return
            time.sleep(0.2)
        self.stop()
        raise AssertionError('the demo did not serve:\n' + self.text)

    @property
    def text(self):
        """What it printed so far."""
        self._log.seek(0)
        return self._log.read()

    def stop(self):
        """Stop it as Ctrl-C would; returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.returncode = self.process.returncode
        return self.returncode


class ServedDemoTest(testtools.TestCase):
    """openstacksdk against ``--serve``: the plugin's rebuild, for real."""

    MICROVERSION = mv.NOVA_MAX

    def setUp(self):
        super().setUp()
        self.served = ServedDemo()
        self.addCleanup(self.served.stop)
        self.endpoint = self.served.endpoint

    def _connect(self, project, roles='member,reader'):
        """A real openstacksdk connection, as a user of *project*.

        The sandbox has no Keystone: the identity is in the headers.
        """
        sess = session.Session(auth=noauth.NoAuth(), additional_headers={
            'X-User-Id': '%s-user' % project, 'X-Project-Id': project,
            'X-Roles': roles})
        return openstack.connection.Connection(
            session=sess, compute_endpoint_override=self.endpoint,
            compute_api_version=self.MICROVERSION)

    def test_openstacksdk_rebuilds_a_buried_server(self):
        science = self._connect('science')
        other = self._connect('other')
        image_id = next(iter(science.compute.servers())).image['id']
        # The banner names it.
        self.assertIn("Image of the demo's servers, for yours too: %s\n"
                      % image_id, self.served.text)

        # The scenario left one VCPU free: take it.
        filler = other.compute.create_server(
            name='filler', image_id=image_id, flavor_id='1',
            networks='none')
        other.compute.wait_for_server(filler, wait=30, interval=0.2)

        server = science.compute.create_server(
            name='sdk-1', image_id=image_id, flavor_id='1',
            networks='none')
        server = science.compute.wait_for_server(
            server, status='ERROR', failures=[], wait=30, interval=0.2)
        self.assertIn('No valid host', server.fault['message'])

        other.compute.delete_server(filler)
        other.compute.wait_for_delete(filler, wait=30, interval=0.2)
        # Nova removes the placement allocations before the server is gone.
        rebuilt = science.compute.rebuild_server(server, image=image_id)
        self.assertEqual(server.id, rebuilt.id)
        active = science.compute.wait_for_server(
            server, wait=30, interval=0.2)
        self.assertEqual(server.id, active.id)
        self.assertEqual('ACTIVE', active.status)

        # Without identity headers a request is a member, not the admin:
        # all projects are the admin's to list, who asks with X-Roles.
        anyone = session.Session(auth=noauth.NoAuth())
        listed = anyone.get(
            self.endpoint + '/servers?all_tenants=1', raise_exc=False,
            headers={'OpenStack-API-Version': 'compute 2.1'})
        self.assertEqual(403, listed.status_code, listed.text)
        listed = anyone.get(
            self.endpoint + '/servers?all_tenants=1', raise_exc=False,
            headers={'OpenStack-API-Version': 'compute 2.1',
                     'X-Roles': 'admin,member,reader'})
        self.assertEqual(200, listed.status_code, listed.text)
        self.assertIn(server.id, listed.text)

        self.assertEqual(0, self.served.stop(), self.served.text)


class QuickstartTest(testtools.TestCase):
    """What the quick start page tells a new user to type."""

    def test_it_gives_the_demos_image_by_its_id(self):
        # Several images of Nova's stub Glance share its name.
        source_tree = os.path.dirname(os.path.dirname(
            os.path.abspath(nova_cell0_rebuild.__file__)))
        path = os.path.join(source_tree, 'doc', 'source', 'quickstart.rst')
        if not os.path.exists(path):
            self.skipTest('not a source tree: %s' % path)
        with open(path) as page:
            text = page.read()
        image = nova_fixtures.GlanceFixture.image1
        commands = [line.strip() for line in text.splitlines()
                    if line.strip().startswith('$ ')]
        self.assertIn('$ export IMAGE=%s' % image['id'], commands)
        self.assertEqual([], [command for command in commands
                              if '--image' in command
                              and '--image $IMAGE' not in command])
