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

"""A private RabbitMQ node from the Debian package, without systemd.

``/usr/sbin/rabbitmq-server`` switches to the rabbitmq user and cannot
write another directory: the real script is run directly, as root, with its
data, logs, node name and ports set through the environment. Used by the
minicloud and by the relay's functional test
(``nova_cell0_rebuild/tests/functional/test_aardvark_relay.py``).
"""

import os
import shutil
import signal

import processes

BIN = '/usr/lib/rabbitmq/bin'
NAME = 'rabbitmq'


def installed():
    """Whether the Debian package's server script is there."""
    return os.access(os.path.join(BIN, 'rabbitmq-server'), os.X_OK)


class PrivateRabbitMQ(object):
    """One RabbitMQ node, its files under ``base``.

    :param procs: the :class:`processes.Processes` that runs it.
    :param nodename: the Erlang node name, e.g. ``minicloud5@localhost``.
    :param port: the AMQP port; the distribution port is ``dist_port``
        (default one above).
    :param epmd_port: a port for an Erlang port mapper of its own (stopped
        with the node); None shares the machine's (4369).
    """

    def __init__(self, procs, base, nodename, port, dist_port=None,
                 epmd_port=None):
        self.procs = procs
        self.base = os.path.abspath(base)
        self.nodename = nodename
        self.port = port
        self.dist_port = dist_port or port + 1
        self.epmd_port = epmd_port

    @property
    def url(self):
        """A transport URL; guest may log in from localhost."""
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def env(self):
        env = {
            'HOME': self.base,
            'RABBITMQ_MNESIA_BASE': os.path.join(self.base, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(self.base, 'log'),
            'RABBITMQ_NODENAME': self.nodename,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(self.dist_port),
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(self.base,
                                                          'plugins'),
        }
        if self.epmd_port:
            env['ERL_EPMD_PORT'] = str(self.epmd_port)
        return env

    def start(self, timeout=90):
        os.makedirs(self.base, exist_ok=True)
        with open(os.path.join(self.base, 'plugins'), 'w') as plugins:
            plugins.write('[].\n')
        self.procs.start(NAME, [os.path.join(BIN, 'rabbitmq-server')],
                         env=self.env())
        self.wait(timeout)

    def ctl(self, *args, timeout=60):
        """Run ``rabbitmqctl`` on this node (its output goes to its log)."""
        return self.procs.run('rabbitmqctl', [
            os.path.join(BIN, 'rabbitmqctl'), '-n', self.nodename] +
            list(args), env=self.env(), timeout=timeout)

    def wait(self, timeout=90):
        def started():
            try:
                self.procs.run('probe', [
                    os.path.join(BIN, 'rabbitmqctl'), '-n', self.nodename,
                    'await_startup'], env=self.env(), timeout=30)
                return True
            except (processes.BringUpError, OSError):
                return False
        processes.wait_for('RabbitMQ started', started, timeout,
                           watch=lambda: self.procs.check_alive(NAME))

    def stop(self):
        """Stop the node, and its own port mapper if it has one."""
        self.procs.kill(NAME, signal.SIGTERM)
        if self.epmd_port:
            try:
                self.procs.run('probe', [
                    shutil.which('epmd') or 'epmd', '-port',
                    str(self.epmd_port), '-kill'], timeout=30)
            except (processes.BringUpError, OSError):
                pass  # it had not started, or is gone already
