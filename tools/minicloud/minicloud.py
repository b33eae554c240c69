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

"""A small multi-process OpenStack on one machine, with the plugin in it.

Separate OS processes, no internet: MariaDB and RabbitMQ from the Debian
packages; Keystone (fernet tokens), placement, Glance (file store) and two
nova-api under uwsgi; nova-conductor, nova-scheduler and two nova-compute
with Nova's fake driver; a stand-in for Neutron (``neutron_standin.py``);
redis, and stock Aardvark's two versions installed in virtualenvs of their
own (``aardvark.py``) for the relay's scenario to start. The plugin is
installed and enabled by following the install guide's code blocks
(``install_doc.py``), with the pip of a fresh ``python3 -m venv``.

Usage (from the source tree, in a Python environment holding the services:
``tox -e cloud`` makes one)::

    python tools/minicloud/minicloud.py up WORKDIR
    python tools/minicloud/minicloud.py kill|stop|restart SERVICE WORKDIR
    python tools/minicloud/minicloud.py down WORKDIR
    python tools/minicloud/minicloud.py results [--clear] FIGURES.json

``up`` writes ``WORKDIR/cloud.json`` (what the scenario reads) and
``WORKDIR/clouds.yaml`` (for ``openstack --os-cloud demo-member``). Service
logs stay in ``WORKDIR/logs`` after ``down``.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import aardvark
import configs
import galera
import identity
import install_doc
import processes
import rabbitmq

SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
COMPUTES = ('compute1', 'compute2')
DATABASES = ('keystone', 'placement', 'glance', 'nova_api', 'nova_cell0',
             'nova_cell1', 'aardvark')
#: Stock Aardvark's versions (tests/cloud/test_aardvark.py).
AARDVARK_VERSIONS = ('all_in_one', 'master')
EPMD_PORT = 4369
#: What the elected copy of nova-cell0-rebuild-pending logs.
PENDING_ELECTED = 'dispatches waits for room, epoch'


class MiniCloud(object):

    def __init__(self, workdir):
        self.workdir = os.path.abspath(workdir)
        self.venv = sys.prefix
        self.procs = processes.Processes(self.workdir)
        self.etc = os.path.join(self.workdir, 'etc')
        self.timings = {}

    # -- helpers ---------------------------------------------------------

    def _bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def _path(self, *parts):
        return os.path.join(self.workdir, *parts)

    def _write(self, relative, text):
        path = self._path(relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as out:
            out.write(text)
        return path

    def _timed(self, step, function, *args):
        started = time.monotonic()
        result = function(*args)
        self.timings[step] = round(time.monotonic() - started, 1)
        print('minicloud: %-28s %6.1f s' % (step, self.timings[step]),
              flush=True)
        return result

    def _parallel(self, *steps):
        with concurrent.futures.ThreadPoolExecutor(len(steps)) as pool:
            futures = [pool.submit(self._timed, name, function)
                       for name, function in steps]
            for future in futures:
                future.result()

    # -- databases and message bus -----------------------------------------

    def _mariadb(self):
        data = self._path('mariadb', 'data')
        socket = self._path('mariadb', 'mysqld.sock')
        as_root = ['--user=root'] if os.geteuid() == 0 else []
        self.procs.run('mariadb-install', [
            shutil.which('mariadb-install-db') or 'mysql_install_db',
            '--no-defaults', '--datadir=' + data, '--skip-test-db',
            '--auth-root-authentication-method=socket'] + as_root)
        self.procs.start('mariadb', [
            shutil.which('mariadbd', path='/usr/sbin:' + os.environ['PATH']),
            '--no-defaults', '--datadir=' + data, '--socket=' + socket,
            '--bind-address=127.0.0.1', '--skip-name-resolve',
            '--port=%d' % configs.PORTS['mariadb'],
            '--innodb-buffer-pool-size=256M',
            '--innodb-flush-log-at-trx-commit=2',
            '--character-set-server=utf8mb4', '--max-connections=1000',
            '--log-error=' + self.procs.log_path('mariadb')] + as_root)
        client = [shutil.which('mariadb') or 'mysql', '--no-defaults',
                  '--socket=' + socket, '-u', 'root']
        processes.wait_for(
            'MariaDB answering',
            lambda: self._try(client + ['-e', 'SELECT 1']), 60,
            watch=lambda: self.procs.check_alive('mariadb'))
        statements = ["CREATE USER 'cloud'@'%%' IDENTIFIED BY '%s'"
                      % configs.PASSWORD,
                      "GRANT ALL PRIVILEGES ON *.* TO 'cloud'@'%'"]
        statements += ['CREATE DATABASE %s CHARACTER SET utf8mb4' % name
                       for name in DATABASES]
        self.procs.run('mariadb-install', client + ['-e',
                                                    '; '.join(statements)])

    def _try(self, command, env=None, timeout=10):
        """Whether a command succeeds (its output goes to probe.log)."""
        try:
            self.procs.run('probe', command, env=env, timeout=timeout)
            return True
        except (processes.BringUpError, OSError):
            return False

    def _rabbitmq_node(self):
        return rabbitmq.PrivateRabbitMQ(
            self.procs, self._path('rabbitmq'),
            'minicloud%d@localhost' % configs.PORT_BASE,
            configs.PORTS['rabbitmq'])

    def rabbitmq_env(self):
        return self._rabbitmq_node().env()

    def _rabbitmq(self):
        self.epmd_was_running = processes.port_open(EPMD_PORT)
        # RabbitMQ's epmd daemonizes out of our process group: down stops
        # it if it was not running before.
        self._write('run/epmd-was-running', str(self.epmd_was_running))
        self._rabbitmq_node().start()

    def wait_for_rabbitmq(self, timeout=90):
        self._rabbitmq_node().wait(timeout)

    def _redis(self):
        """A private redis for Aardvark all_in_one's job board.

        all_in_one has no option for the port: 6379 it is, so a redis of
        the machine's own on 6379 stops the bring-up rather than be used.
        """
        if processes.port_open(configs.PORTS['redis']):
            raise processes.BringUpError(
                'port %d is taken: Aardvark all_in_one\'s job board needs a '
                'redis there (its port is fixed); stop that server'
                % configs.PORTS['redis'])
        data = self._path('redis')
        os.makedirs(data, exist_ok=True)
        self.procs.start('redis', [
            shutil.which('redis-server', path='/usr/bin:' +
                         os.environ['PATH']) or 'redis-server',
            '--bind', '127.0.0.1', '--port', str(configs.PORTS['redis']),
            '--dir', data, '--save', '', '--appendonly', 'no',
            '--daemonize', 'no'])
        processes.wait_for(
            'redis answering on port %d' % configs.PORTS['redis'],
            lambda: processes.port_open(configs.PORTS['redis']), 30,
            watch=lambda: self.procs.check_alive('redis'))

    def _aardvark(self):
        """Both stock Aardvark versions, each in its own virtualenv."""
        return {version: aardvark.install(self.procs, SOURCE_TREE,
                                          self.workdir, version)
                for version in AARDVARK_VERSIONS}

    # -- configuration -----------------------------------------------------

    def _write_configs(self):
        self._write('etc/keystone/keystone.conf',
                    configs.keystone_conf(self.workdir))
        self._write('etc/placement/placement.conf',
                    configs.placement_conf(self.workdir))
        self._write('etc/glance/glance-api.conf',
                    configs.glance_conf(self.workdir))
        shutil.copy(os.path.join(self.venv, 'etc', 'glance',
                                 'glance-api-paste.ini'),
                    self._path('etc', 'glance'))
        self._write('etc/nova/nova.conf', configs.nova_conf(self.workdir))
        if galera.enabled():
            # nova-api-2 writes its API database through node 2 itself.
            self._write('etc/nova-api-2/nova.conf', configs.nova_conf(
                self.workdir, api_galera_node=2))
        for host in COMPUTES:
            self._write('etc/nova/%s.conf' % host,
                        configs.compute_conf(self.workdir, host))
        if configs.PENDING:
            self._write('etc/nova/pending.conf', configs.pending_conf())
        for name in ('glance/images', 'glance/staging', 'glance/tasks',
                     'nova/locks', 'nova/state', 'keystone'):
            os.makedirs(self._path(name), exist_ok=True)

    def _nova_conf(self):
        return ['--config-file', self._path('etc', 'nova', 'nova.conf')]

    # -- the install guide ------------------------------------------------

    def _guide(self):
        return install_doc.InstallGuide.from_file(
            os.path.join(SOURCE_TREE, install_doc.GUIDE))

    def _operator_pip(self):
        """The pip an operator has: the one a fresh ``python3 -m venv`` has.

        It installs into this environment (Nova's) with ``pip --python``,
        so the guide's commands meet the pip ``venv`` ships (23.2.1 on
        Python 3.11), not the newer one tox put here.

        :returns: the command line that runs it, and its version.
        """
        venv = self._path('operator-pip')
        python = shutil.which('python%d.%d' % sys.version_info[:2])
        self.procs.run('plugin-install', [python or sys.executable, '-m',
                                          'venv', venv])
        pip = [os.path.join(venv, 'bin', 'python'), '-m', 'pip']
        version = self._output(pip + ['--version']).split()[1]
        return pip + ['--python', self._bin('python')], version

    def _source_copy(self):
        """This source tree, copied for the guide's ``pip wheel``.

        pbr writes its egg-info into the tree it builds; CI's other tox
        envs build the same tree meanwhile (their editable installs), so
        the wheel is built from a copy: its files and git history, without
        venvs and build output.
        """
        source = self._path('source')
        shutil.rmtree(source, ignore_errors=True)
        shutil.copytree(SOURCE_TREE, source, symlinks=True,
                        ignore=shutil.ignore_patterns(
                            '.tox', '.stestr', 'dist', 'build',
                            '*.egg-info', '__pycache__'))
        return source

    def _install_plugin(self):
        """Install the plugin as the guide says: build a wheel, install it."""
        guide = self._guide()
        dist = self._path('dist')
        source = self._source_copy()
        pip, self.operator_pip_version = self._operator_pip()
        for command in guide.pip_commands():
            if command[1] == 'install' and 'dist/' not in command[-1]:
                continue  # the guide's other way: from the source tree
            self.procs.run('plugin-install', pip + [
                expanded for word in command[1:]
                for expanded in _guide_words(word, dist, source)])

    def _paste_file(self):
        guide = self._guide()
        with open(os.path.join(self.venv, 'etc', 'nova',
                               'api-paste.ini')) as stock:
            text = install_doc.apply_paste_sections(
                stock.read(), guide.paste_sections())
        self._write('etc/nova/api-paste.ini', text)
        return guide.nova_config_files()

    def _plugin_db_sync(self):
        for command in self._guide().manage_commands():
            self.procs.run('plugin-install', [self._bin(command[0])] + [
                self._path('etc', 'nova', 'nova.conf')
                if word == '/etc/nova/nova.conf' else word
                for word in command[1:]])

    # -- services ------------------------------------------------------------

    def _keystone_db(self):
        conf = ['--config-file', self._path('etc/keystone/keystone.conf')]
        manage = [self._bin('keystone-manage')] + conf
        user = ['--keystone-user', 'root', '--keystone-group', 'root']
        self.procs.run('keystone-manage', manage + ['db_sync'])
        self.procs.run('keystone-manage', manage + ['fernet_setup'] + user)
        self.procs.run('keystone-manage',
                       manage + ['credential_setup'] + user)
        self.procs.run('keystone-manage', manage + [
            'bootstrap', '--bootstrap-password', configs.PASSWORD,
            '--bootstrap-region-id', configs.REGION,
            '--bootstrap-admin-url', configs.url('keystone'),
            '--bootstrap-internal-url', configs.url('keystone'),
            '--bootstrap-public-url', configs.url('keystone')])

    def _keystone(self):
        self._keystone_db()
        self._start_wsgi('keystone', 'keystone.wsgi.api:application',
                         {'OS_KEYSTONE_CONFIG_DIR': self._path(
                             'etc', 'keystone')})
        self._wait_http('keystone')
        identity.create_all()

    def _placement_db(self):
        self.procs.run('placement-manage', [
            self._bin('placement-manage'), '--config-file',
            self._path('etc/placement/placement.conf'), 'db', 'sync'])

    def _glance_db(self):
        self.procs.run('glance-manage', [
            self._bin('glance-manage'), '--config-file',
            self._path('etc/glance/glance-api.conf'), 'db', 'sync'])

    def _nova_db(self):
        manage = [self._bin('nova-manage')] + self._nova_conf()
        self.procs.run('nova-manage', manage + ['api_db', 'sync'])
        self.procs.run('nova-manage', manage + [
            'cell_v2', 'map_cell0', '--database_connection',
            configs.database_url('nova_cell0')])
        self.procs.run('nova-manage', manage + [
            'cell_v2', 'create_cell', '--name', 'cell1'])
        self.procs.run('nova-manage', manage + ['db', 'sync'])
        self._install_plugin()
        self._plugin_db_sync()

    def _start_wsgi(self, name, module, env, processes_count=1):
        self.procs.start(name, configs.uwsgi_command(
            self.venv, module, configs.PORTS[name],
            processes=processes_count), env=env)

    def _wait_http(self, name, timeout=120):
        processes.wait_for(
            '%s answering on port %d' % (name, configs.PORTS[name]),
            lambda: processes.http_answers(configs.url(name)), timeout,
            watch=lambda: self.procs.check_alive(name))

    def nova_api_env(self, api='nova-api-1'):
        """nova-api's environment.

        In galera mode nova-api-2 has its own configuration directory: its
        API database is node 2.
        """
        files = self._paste_file()
        directory = self._path('etc', 'nova')
        if api == 'nova-api-2' and galera.enabled():
            shutil.copy(self._path('etc', 'nova', 'api-paste.ini'),
                        self._path('etc', 'nova-api-2'))
            directory = self._path('etc', 'nova-api-2')
        return {'OS_NOVA_CONFIG_DIR': directory,
                'OS_NOVA_CONFIG_FILES': files}

    def _services(self):
        self._start_wsgi('placement', 'placement.wsgi.api:application',
                         {'OS_PLACEMENT_CONFIG_DIR': self._path(
                             'etc', 'placement')})
        glance = configs.uwsgi_command(
            self.venv, 'glance.wsgi.api:application',
            configs.PORTS['glance']) + ['--http-chunked-input',
                                        '--http-raw-body']
        self.procs.start('glance', glance, env={
            'OS_GLANCE_CONFIG_DIR': self._path('etc', 'glance')})
        self.procs.start('neutron', [
            self._bin('python'),
            os.path.join(os.path.dirname(__file__), 'neutron_standin.py'),
            str(configs.PORTS['neutron'])])
        for api in ('nova-api-1', 'nova-api-2'):
            self._start_wsgi(api, 'nova.wsgi.osapi_compute:application',
                             self.nova_api_env(api), processes_count=2)
        for service in ('nova-conductor', 'nova-scheduler'):
            self.procs.start(service, [self._bin(service)]
                             + self._nova_conf())
        for host in COMPUTES:
            self.procs.start('nova-%s' % host, [
                self._bin('nova-compute')] + self._nova_conf() + [
                '--config-file', self._path('etc', 'nova', host + '.conf')])
        for name in ('placement', 'glance', 'neutron', 'nova-api-1',
                     'nova-api-2'):
            self._wait_http(name)
        self._discover_hosts()

    def _discover_hosts(self):
        manage = [self._bin('nova-manage')] + self._nova_conf()

        def all_mapped():
            self.procs.run('nova-manage', manage + [
                'cell_v2', 'discover_hosts'])
            listing = self._output(manage + ['cell_v2', 'list_hosts'])
            return all(host in listing for host in COMPUTES)

        def computes_alive():
            for host in COMPUTES:
                self.procs.check_alive('nova-' + host)

        processes.wait_for('both computes mapped to cell1', all_mapped,
                           180, interval=2, watch=computes_alive)

    def _output(self, command):
        return subprocess.run(command, capture_output=True, text=True,
                              check=True).stdout

    def _contents(self):
        """The public image, the flavors and a key pair for the users."""
        conn = identity.admin_connection()
        image_path = self._write('glance/cirros.img', '\0' * 4096)
        image = conn.image.create_image(
            name='minicloud-image', filename=image_path,
            disk_format='raw', container_format='bare',
            visibility='public', allow_duplicates=True)
        flavors = {}
        for name in ('preemptible', 'standard'):
            flavors[name] = conn.compute.create_flavor(
                name=name, ram=3072, vcpus=1, disk=1).id
        conn.close()
        return {'image_id': image.id, 'flavors': flavors}

    def _pending(self):
        """Two copies of nova-cell0-rebuild-pending, as the admin page runs
        them: nova.conf, then a file with the coordination URL.

        :returns: once one copy dispatches and both run.
        """
        for name in configs.PENDING_COPIES:
            self.procs.start(name, [
                self._bin('nova-cell0-rebuild-pending')] + self._nova_conf()
                + ['--config-file', self._path('etc', 'nova',
                                               'pending.conf')])

        def both_alive():
            for name in configs.PENDING_COPIES:
                self.procs.check_alive(name)

        def one_dispatches():
            return any(PENDING_ELECTED in processes.tail(
                self.procs.log_path(name), 100000)
                for name in configs.PENDING_COPIES)

        processes.wait_for('a copy of nova-cell0-rebuild-pending elected',
                           one_dispatches, 120, watch=both_alive)

    def _upgrade_check(self):
        self.procs.run('plugin-install', [
            self._bin('nova-cell0-rebuild-status')] + self._nova_conf() + [
            'upgrade', 'check'], env=self.nova_api_env())

    # -- commands --------------------------------------------------------

    def up(self):
        """Bring the cloud up from nothing; on failure, take it down."""
        if self.procs.names():
            self.down()
        if os.path.exists(self.workdir):
            shutil.rmtree(self.workdir)
            self.procs = processes.Processes(self.workdir)
        try:
            self._up()
        except BaseException:
            print('minicloud: bring-up failed, stopping what started; logs '
                  'in %s' % self.procs.log_dir, file=sys.stderr, flush=True)
            self.down()
            raise

    def _up(self):
        started = time.monotonic()
        self._write_configs()
        aardvark_venvs = {}
        if galera.enabled():
            # Nova's databases on a Galera cluster; no Aardvark (its redis
            # port is fixed, and the cloud job's cloud may use it).
            self._parallel(('mariadb', self._mariadb),
                           ('rabbitmq', self._rabbitmq),
                           ('galera cluster', lambda: galera.up(self.procs)))
            venvs = []
        else:
            # Checked first: a missing or altered tarball fails in a second.
            for version in AARDVARK_VERSIONS:
                aardvark.checked_tarball(SOURCE_TREE, version)
            self._parallel(('mariadb', self._mariadb),
                           ('rabbitmq', self._rabbitmq),
                           ('redis', self._redis))
            venvs = [('aardvark venvs', lambda: aardvark_venvs.update(
                self._aardvark()))]
        self._parallel(('keystone', self._keystone),
                       ('placement db', self._placement_db),
                       ('glance db', self._glance_db),
                       ('nova db + plugin', self._nova_db), *venvs)
        self._timed('services', self._services)
        contents = self._timed('image and flavors', self._contents)
        if configs.PENDING:
            # Before the upgrade check: it warns while waits are enabled
            # and no copy dispatches.
            self._timed('pending service', self._pending)
        self._timed('upgrade check', self._upgrade_check)
        clouds = self._write('clouds.yaml', identity.clouds_yaml())
        self.timings['bring-up'] = round(time.monotonic() - started, 1)
        description = {
            'workdir': self.workdir, 'venv': self.venv,
            'clouds_yaml': clouds, 'ports': configs.PORTS,
            'password': configs.PASSWORD, 'computes': list(COMPUTES),
            'nova_conf': self._path('etc', 'nova', 'nova.conf'),
            'nova_api_env': self.nova_api_env(),
            'epmd_was_running': self.epmd_was_running,
            'operator_pip_version': self.operator_pip_version,
            'rabbitmq': {'nodename': self._rabbitmq_node().nodename,
                         'env': self.rabbitmq_env(),
                         'transport_url': configs.TRANSPORT_URL},
            'aardvark_venvs': aardvark_venvs,
            'source_tree': SOURCE_TREE,
            'timings': self.timings,
            'database': configs.DATABASE,
            'pending': {
                'copies': list(configs.PENDING_COPIES) if configs.PENDING
                else [],
                'conf': self._path('etc', 'nova', 'pending.conf')},
        }
        if galera.enabled():
            description['galera'] = galera.description()
        description.update(contents)
        self._write('cloud.json', json.dumps(description, indent=2))
        print('minicloud: up in %.0f s; logs in %s' % (
            self.timings['bring-up'], self.procs.log_dir), flush=True)

    def kill(self, name, sig=signal.SIGKILL):
        self.procs.kill(name, sig)

    def stop(self, name):
        self.procs.kill(name, signal.SIGTERM)

    def restart(self, name):
        self.procs.restart(name)
        if name == 'rabbitmq':
            self.wait_for_rabbitmq()
        elif name in configs.PORTS:
            self._wait_http(name)

    def down(self):
        """Stop every service; fail if any process of the cloud is left."""
        self.procs.kill_all(self.procs.names(), signal.SIGTERM, timeout=20)
        if galera.enabled():
            galera.down()
        try:
            with open(self._path('run', 'epmd-was-running')) as state:
                epmd_was_running = state.read() != 'False'
        except OSError:
            epmd_was_running = True
        if not epmd_was_running:
            self._try([shutil.which('epmd') or 'epmd', '-kill'])
        left = [name for name in self.procs.names()
                if self.procs.alive(name)]
        left += leftover_pids(self.workdir)
        if left:
            raise processes.BringUpError('left running: %s' % left)
        print('minicloud: down; logs kept in %s' % self.procs.log_dir)


def _guide_words(word, dist, source):
    """One word of the guide's pip commands, as a shell here expands it.

    :param source: the source tree the guide's ``/path/to`` stands for.
    """
    word = word.replace('/path/to/nova-cell0-rebuild', source)
    if word.startswith('dist'):
        word = word.replace('dist', dist, 1)
    word = word.replace('$PWD/dist', dist)
    name, at, url = word.partition(' @ file://')
    if at:
        # "name[extra] @ file://.../nova_cell0_rebuild-<version>-...whl"
        (path,) = glob.glob(url.replace('<version>', '*'))
        return [name + at + path]
    return sorted(glob.glob(word)) or [word]


def _process_table():
    """{pid: (parent pid, session id, command line)} of live processes."""
    table = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
            with open('/proc/%s/cmdline' % entry, 'rb') as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        # fields: state ppid pgrp session ...; a zombie has no command.
        if fields[0] != 'Z':
            table[int(entry)] = (int(fields[1]), int(fields[3]), command)
    return table


def _ancestors(pid, table):
    """*pid* and the processes it descends from."""
    found = set()
    while pid in table and pid not in found:
        found.add(pid)
        pid = table[pid][0]
    return found


def leftover_pids(workdir):
    """Processes of the cloud: their command line names the working
    directory, and they are neither this process, nor one it descends from
    (a ``timeout`` wrapper, the shell that ran it), nor another of its
    session (the ``tee`` of a pipe): every service is started in a session
    of its own (``Processes.start``), and what it leaves keeps that session
    or makes one of its own.
    """
    table = _process_table()
    mine = _ancestors(os.getpid(), table)
    session = os.getsid(0)
    return sorted(pid for pid, (_ppid, sid, command) in table.items()
                  if workdir.encode() in command and pid not in mine and
                  sid != session)


def results(path, clear=False):
    """Print the figures the scenario wrote (or remove the old file)."""
    if clear:
        if os.path.exists(path):
            os.remove(path)
        return
    try:
        with open(path) as figures:
            text = json.dumps(json.load(figures), indent=2, sort_keys=True)
    except (OSError, ValueError) as error:
        text = '(no figures: %s)' % error
    print('minicloud: figures of %s\n%s' % (path, text))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('command', choices=['up', 'down', 'kill', 'stop',
                                            'restart', 'results'])
    parser.add_argument('args', nargs='+',
                        help='WORKDIR, or SERVICE WORKDIR for kill (SIGKILL), '
                             'stop (SIGTERM) and restart, or the JSON file '
                             'of the figures for results')
    parser.add_argument('--clear', action='store_true',
                        help='results: remove the file instead')
    options = parser.parse_args(argv)
    if options.command == 'results':
        results(options.args[0], options.clear)
        return 0
    cloud = MiniCloud(options.args[-1])
    try:
        if options.command in ('kill', 'stop', 'restart'):
            getattr(cloud, options.command)(options.args[0])
        else:
            getattr(cloud, options.command)()
    except (processes.BringUpError, aardvark.AardvarkError) as error:
        print('minicloud: %s failed: %s' % (options.command, error),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
