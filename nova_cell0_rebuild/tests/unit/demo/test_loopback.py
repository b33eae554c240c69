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

"""Where the demo's sandbox may listen: loopback, and alone."""

import socket

import testtools

from nova_cell0_rebuild.demo import loopback


class ParseBindTest(testtools.TestCase):

    def test_loopback_addresses(self):
        for value, expected in (('127.0.0.1:8774', ('127.0.0.1', 8774)),
                                ('127.1.2.3:0', ('127.1.2.3', 0)),
                                ('localhost:9000', ('127.0.0.1', 9000)),
                                ('[::1]:8774', ('::1', 8774))):
            self.assertEqual(expected, loopback.parse_bind(value), value)

    def test_addresses_other_hosts_can_reach_are_refused(self):
        for value in ('0.0.0.0:8774', '10.0.0.5:8774', '[::]:8774',
                      '[::ffff:127.0.0.1]:8774', '192.168.1.1:80'):
            exc = self.assertRaises(loopback.NotLoopback,
                                    loopback.parse_bind, value)
            self.assertIn('is not a loopback address', str(exc))

    def test_malformed(self):
        for value in ('8774', '127.0.0.1', '127.0.0.1:http',
                      '127.0.0.1:70000', 'example.com:80'):
            self.assertRaises(ValueError, loopback.parse_bind, value)


class ListenTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.holders = []

    def _holder(self, share):
        """A listening socket, kept open until the test ends.

        Kept referenced: once the tests have imported Nova 31 or older,
        eventlet has patched socket, and a green socket closes when it is
        collected, however its close method is held.
        """
        holder = socket.socket()
        self.holders.append(holder)
        self.addCleanup(holder.close)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if share:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(('127.0.0.1', 0))
        holder.listen(5)
        return holder.getsockname()[1]

    def test_a_port_in_use_is_refused(self):
        # Also when the listener there shares its port (SO_REUSEPORT), as
        # eventlet.listen does by default.
        for share in (True, False):
            port = self._holder(share)
            exc = self.assertRaises(OSError, loopback.listen, '127.0.0.1',
                                    port)
            self.assertEqual('[Errno 98] Address already in use', str(exc))

    def test_listens_on_a_free_port(self):
        listening = loopback.listen('127.0.0.1', 0)
        self.addCleanup(listening.close)
        host, port = listening.getsockname()
        self.assertEqual('127.0.0.1', host)
        self.assertNotEqual(0, port)
        self.assertEqual(0, listening.getsockopt(socket.SOL_SOCKET,
                                                 socket.SO_REUSEPORT))
        with socket.create_connection((host, port), timeout=5):
            pass

    def test_refuses_other_addresses(self):
        self.assertRaises(loopback.NotLoopback, loopback.listen, '0.0.0.0',
                          0)
