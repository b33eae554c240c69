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

"""Stock Aardvark and the relay as services of the minicloud.

The bring-up installed both Aardvark versions in virtualenvs of their own
(``tools/minicloud/aardvark.py``). Here each is configured from its file
in ``etc/aardvark/`` (the one the docs show), with only the values marked
``# site`` replaced by the minicloud's, and started with the relay as the
minicloud starts its services: in sessions of their own, their pids under
``run/`` so that ``minicloud.py down`` stops what a failed test left.
"""

import importlib.util
import os
import re
import signal
import subprocess
import time

from nova_cell0_rebuild.tests.cloud import clients

ETC = os.path.join(clients.SOURCE_TREE, 'etc', 'aardvark')
#: Aardvark's topic: the relay's [cell0_rebuild_relay] publish_topics.
TOPIC = 'cell0_rebuild_aardvark'
#: The relay's [cell0_rebuild_relay] listener_pool (its queue's name).
RELAY_POOL = 'nova-cell0-rebuild-aardvark-relay'
RELAY = 'aardvark-relay'


def _minicloud_module(name):
    path = os.path.join(clients.SOURCE_TREE, 'tools', 'minicloud',
                        name + '.py')
    spec = importlib.util.spec_from_file_location('minicloud_' + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def configured(text, site):
    """An Aardvark configuration file with its site values replaced.

    :param text: the file of ``etc/aardvark/``.
    :param site: {section: {option: value}}; each option must be set in
        that section of the file already.
    :returns: the new text (comments and everything else unchanged).
    :raises: ValueError naming a site option the file does not set.
    """
    left = {(section, option) for section, options in site.items()
            for option in options}
    section = None
    lines = []
    for line in text.splitlines():
        header = re.match(r'\[(.+)\]\s*$', line)
        option = re.match(r'(\w+)\s*=', line)
        if header:
            section = header.group(1)
        elif option and option.group(1) in site.get(section, {}):
            name = option.group(1)
            line = '%s = %s' % (name, site[section][name])
            left.discard((section, name))
        lines.append(line)
    if left:
        raise ValueError('not set in the file: %s' % sorted(left))
    return '\n'.join(lines) + '\n'


class StockAardvark(object):
    """One Aardvark version and the relay, on one minicloud."""

    def __init__(self, cloud, version):
        self.cloud = cloud
        self.version = version
        self.description = cloud.description
        self.workdir = cloud.workdir
        self.venv = self.description['aardvark_venvs'][version]
        self.procs = _minicloud_module('processes').Processes(self.workdir)
        self.name = 'aardvark-' + version
        self.log_file = os.path.join(self.procs.log_dir,
                                     self.name + '-service.log')
        self.conf = os.path.join(self.workdir, 'etc', 'aardvark',
                                 version + '.conf')
        self.relay_conf = os.path.join(self.workdir, 'etc', 'aardvark',
                                       'relay-%s.conf' % version)

    # -- configuration -----------------------------------------------------

    def site(self):
        """The minicloud's values for the ``# site`` options."""
        ports = self.description['ports']
        auth = {'auth_url': 'http://127.0.0.1:%d' % ports['keystone'],
                'password': self.description['password'],
                'region_name': 'RegionOne'}
        site = {'DEFAULT': {'log_file': self.log_file},
                'notification': {
                    'urls': self.description['rabbitmq']['transport_url']},
                'compute': auth, 'placement': auth, 'identity': auth}
        if self.version == 'all_in_one':
            site['reaper'] = {'backend_host': '127.0.0.1'}
        else:
            site['cinder'] = auth
            site['database'] = {'connection': (
                'mysql+pymysql://cloud:%s@127.0.0.1:%d/aardvark'
                '?charset=utf8mb4' % (self.description['password'],
                                      ports['mariadb']))}
        return site

    def write_configs(self, changes=None):
        """Aardvark's file (and the relay's) for this cloud.

        :param changes: {section: {option: value}} to set besides the site
            values, each an option the file sets.
        """
        site = self.site()
        for section, options in (changes or {}).items():
            site.setdefault(section, {}).update(options)
        with open(os.path.join(ETC, self.version + '.conf')) as stock:
            text = configured(stock.read(), site)
        os.makedirs(os.path.dirname(self.conf), exist_ok=True)
        with open(self.conf, 'w') as out:
            out.write(text)
        with open(self.relay_conf, 'w') as out:
            out.write('[cell0_rebuild_relay]\n'
                      'aardvark_events = %s\n'
                      'publish_topics = %s\n' % (self.version, TOPIC))

    # -- processes -----------------------------------------------------------

    def _bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def db_sync(self):
        """master's own database (``aardvark_db upgrade``)."""
        subprocess.run([self._bin('aardvark_db'), '--config-file',
                        self.conf, 'upgrade'], check=True, timeout=300,
                       capture_output=True)

    def start(self):
        """Aardvark, then the relay; :returns: once both consume."""
        self.purge(TOPIC + '.error', TOPIC + '.info')
        self.start_aardvark()
        self.wait_consuming(self.name, TOPIC + '.error', TOPIC + '.info')
        self.start_relay()

    def start_aardvark(self):
        self.procs.start(self.name, [self._bin('aardvark_reaper'),
                                     '--config-file', self.conf])

    def aardvark_alive(self):
        return self.procs.alive(self.name)

    def start_relay(self):
        self.procs.start(RELAY, [
            os.path.join(self.description['venv'], 'bin',
                         'nova-cell0-rebuild-aardvark-relay'),
            '--config-file', self.description['nova_conf'],
            '--config-file', self.relay_conf])
        self.wait_consuming(RELAY, RELAY_POOL)

    def stop_relay(self):
        self.procs.kill(RELAY, signal.SIGTERM)

    def stop(self):
        self.procs.kill_all([RELAY, self.name], signal.SIGTERM)

    # -- RabbitMQ ------------------------------------------------------------

    def _rabbitmqctl(self, *args):
        return self.cloud.rabbitmqctl(*args)

    def queues(self):
        """{queue name: (consumers, messages)}."""
        return self.cloud.queues()

    def delete_queues(self, *names):
        existing = self.queues()
        for name in names:
            if name in existing:
                self._rabbitmqctl('delete_queue', name)

    def purge(self, *names):
        existing = self.queues()
        for name in names:
            if name in existing:
                self._rabbitmqctl('purge_queue', name)

    def wait_consuming(self, service, *names, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            queues = self.queues()
            if all(queues.get(name, (0, 0))[0] > 0 for name in names):
                return
            if not self.procs.alive(service):
                raise AssertionError('%s exited:\n%s' % (
                    service, self.logs(service)))
            if time.monotonic() > deadline:
                raise AssertionError('%s: no consumer on %s after %ss:\n%s'
                                     % (service, names, timeout,
                                        self.logs(service)))
            time.sleep(0.5)

    # -- logs --------------------------------------------------------------

    def logs(self, service=None):
        """The end of a service's logs (Aardvark's by default)."""
        paths = [self.procs.log_path(service or self.name)]
        if service in (None, self.name):
            paths.append(self.log_file)
        return '\n'.join(_tail(path) for path in paths)

    def relay_log(self):
        try:
            with open(self.procs.log_path(RELAY), errors='replace') as log:
                return log.read()
        except OSError:
            return ''

    def announcements(self, uuid):
        """How many times the relay announced a server (all its runs)."""
        return self.relay_log().count(
            'Burial of server %s in cell0 announced to Aardvark' % uuid)

    def refusals(self, uuid):
        """The relay's reasons for not announcing a server."""
        return re.findall(r'Burial of server %s in cell0 not announced to '
                          r'Aardvark: (.*)' % uuid, self.relay_log())


def _tail(path, size=4000):
    try:
        with open(path, errors='replace') as log:
            return log.read()[-size:]
    except OSError:
        return '(no log at %s)' % path
