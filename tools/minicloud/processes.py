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

"""Start, watch and stop the minicloud's processes.

Each service is started in a session of its own, its pid written to
``<workdir>/run/<name>.pid`` and its command line and environment to
``<workdir>/run/<name>.json``, so that ``minicloud.py down`` (or a test
that kills a service and starts it again) can find it from another
process. Output goes to ``<workdir>/logs/<name>.log``, kept after teardown.
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class BringUpError(Exception):
    """A step of the bring-up failed; the message says which and why."""


def tail(path, size=3000):
    try:
        with open(path, errors='replace') as log:
            return log.read()[-size:]
    except OSError:
        return '(no log at %s)' % path


class Processes(object):
    """The processes of one minicloud working directory."""

    def __init__(self, workdir):
        self.workdir = os.path.abspath(workdir)
        self.run_dir = os.path.join(self.workdir, 'run')
        self.log_dir = os.path.join(self.workdir, 'logs')
        os.makedirs(self.run_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)

    def log_path(self, name):
        return os.path.join(self.log_dir, name + '.log')

    def run(self, name, command, env=None, timeout=600):
        """Run a command to its end; its output is appended to its log.

        :raises: BringUpError with the end of its log if it fails.
        """
        log_path = self.log_path(name)
        with open(log_path, 'a') as log:
            log.write('$ %s\n' % ' '.join(command))
            log.flush()
            done = subprocess.run(command, stdout=log, stderr=log,
                                  env=self._env(env), timeout=timeout,
                                  cwd=self.workdir)
        if done.returncode:
            raise BringUpError('%s failed (exit %s): %s\n%s' % (
                name, done.returncode, ' '.join(command), tail(log_path)))

    def _env(self, extra):
        env = dict(os.environ)
        env.update(extra or {})
        return env

    def start(self, name, command, env=None):
        """Start a long-running service in a session of its own."""
        spec = {'command': command, 'env': env or {}}
        with open(os.path.join(self.run_dir, name + '.json'), 'w') as out:
            json.dump(spec, out, indent=2)
        return self._spawn(name, spec)

    def _spawn(self, name, spec):
        log = open(self.log_path(name), 'a')
        process = subprocess.Popen(
            spec['command'], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=self._env(spec['env']),
            cwd=self.workdir, start_new_session=True)
        log.close()
        with open(self._pid_file(name), 'w') as out:
            out.write(str(process.pid))
        return process.pid

    def restart(self, name):
        """Start a stopped service again, as it was started first."""
        with open(os.path.join(self.run_dir, name + '.json')) as spec:
            return self._spawn(name, json.load(spec))

    def _pid_file(self, name):
        return os.path.join(self.run_dir, name + '.pid')

    def pid(self, name):
        try:
            with open(self._pid_file(name)) as pid:
                return int(pid.read())
        except (OSError, ValueError):
            return None

    def names(self):
        return sorted(entry[:-4] for entry in os.listdir(self.run_dir)
                      if entry.endswith('.pid'))

    def alive(self, name):
        pid = self.pid(name)
        return pid is not None and _group_alive(pid)

    def kill(self, name, sig=signal.SIGKILL, timeout=30):
        """Signal a service's whole process group and wait for it to go."""
        self.kill_all([name], sig, timeout)

    def kill_all(self, names, sig=signal.SIGTERM, timeout=30):
        """Signal several services at once; SIGKILL what outlives timeout."""
        pids = [pid for pid in map(self.pid, names) if pid is not None]
        for pid in pids:
            _signal_group(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _any_alive(pids):
            time.sleep(0.2)
        for pid in pids:
            _signal_group(pid, signal.SIGKILL)
        while _any_alive(pids):
            time.sleep(0.2)

    def check_alive(self, name):
        if not self.alive(name):
            raise BringUpError('%s exited: %s' % (
                name, tail(self.log_path(name))))


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _any_alive(pgids):
    for pgid in pgids:
        try:
            os.waitpid(pgid, os.WNOHANG)  # our own child: reap it
        except ChildProcessError:
            pass
    alive = _live_groups()
    return any(pgid in alive for pgid in pgids)


def _group_alive(pgid):
    """Whether any process of a process group is still there (not zombie)."""
    return pgid in _live_groups()


def _live_groups():
    """The process groups with a live (not zombie) process."""
    groups = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        # fields: state ppid pgrp ...
        if fields[0] != 'Z':
            groups.add(int(fields[2]))
    return groups


def wait_for(what, check, timeout, interval=0.5, watch=None):
    """Call ``check`` until it returns a true value; raise after timeout.

    :param watch: a callable raising if a process died, to fail early.
    """
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        if watch is not None:
            watch()
        try:
            value = check()
            if value:
                return value
        except Exception as error:  # noqa: B902 - reported below
            last_error = error
        time.sleep(interval)
    raise BringUpError('%s within %ss (last error: %s)'
                       % (what, timeout, last_error))


def port_open(port, host='127.0.0.1'):
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def http_answers(url):
    """Whether an HTTP server answers at url (any status counts)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
