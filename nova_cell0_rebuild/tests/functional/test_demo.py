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

import os
import re
import signal
import subprocess
import sys

from keystoneauth1 import noauth
from keystoneauth1 import session
import openstack
import testtools

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
             'its rebuild from cell0 is refused'],
            [row['step'] for row in rows[1:]], output)
        self.assertEqual({'ok'}, {row['ok'] for row in rows[1:]}, output)
        uuids = UUID_ROW.search(output)
        self.assertIsNotNone(uuids, output)
        self.assertEqual(uuids.group('before'), uuids.group('after'))
        # The timeline tells the story with the reaper's own requests.
        self.assertIn('got compute_task.build_instances.error', output)
        self.assertIn('{"rebuild": {"imageRef": ', output)
        self.assertIn('-> 202 Accepted', output)
        self.assertIn('-> 409 Conflict', output)
        self.assertIn('was created with personality files', output)

    def test_refuses_a_bind_address_other_hosts_can_reach(self):
        demo = subprocess.run(DEMO + ['--serve', '0.0.0.0:8774'],
                              capture_output=True, text=True, timeout=60,
                              env=_environment())
        self.assertEqual(2, demo.returncode)
        self.assertIn('0.0.0.0 is not a loopback address', demo.stderr)
        self.assertEqual('', demo.stdout)


class ServedDemoTest(testtools.TestCase):
    """openstacksdk against ``--serve``: the plugin's rebuild, for real."""

    MICROVERSION = mv.NOVA_MAX

    def setUp(self):
        super().setUp()
        self.demo = subprocess.Popen(
            DEMO + ['--serve', '127.0.0.1:0', '--serve-seconds', '100'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=_environment())
        self.addCleanup(self._stop_demo)
        self.output = []
        for line in self.demo.stdout:
            self.output.append(line)
            serving = SERVING.search(line)
            if serving:
                self.endpoint = serving.group('endpoint')
                break
        else:
            self.fail('the demo did not serve:\n' + ''.join(self.output))

    def _stop_demo(self):
        if self.demo.poll() is None:
            self.demo.send_signal(signal.SIGTERM)
        try:
            rest, _ = self.demo.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.demo.kill()
            rest, _ = self.demo.communicate()
        self.output.append(rest)
        self.stopped_with = self.demo.returncode

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

        self._stop_demo()
        self.assertEqual(0, self.stopped_with, ''.join(self.output))
