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

"""The clients a user and an operator of the minicloud have.

The scenario talks to the cloud ``tools/minicloud/minicloud.py up`` brought
up (its ``cloud.json`` is found through ``$MINICLOUD_DIR``) only as people
do: the ``openstack`` CLI, openstacksdk, curl, and the plugin's console
scripts run against the services' own nova.conf.
"""

import json
import os
import subprocess
import sys
import time

import openstack

MICROVERSION = '2.104'
RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl'
SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


class CloudError(Exception):
    pass


def load():
    workdir = os.environ.get('MINICLOUD_DIR')
    if not workdir:
        raise CloudError('MINICLOUD_DIR is not set: run the scenario with '
                         '"tox -e cloud", which brings the cloud up first')
    with open(os.path.join(workdir, 'cloud.json')) as described:
        return Cloud(json.load(described))


def record_result(keys, value):
    """Set one figure in ``$CLOUD_LATENCY_OUTPUT`` (JSON), keeping the rest.

    :param keys: the path to it, e.g. ``['aardvark', 'master', 'x_s']``.
    """
    output = os.environ.get('CLOUD_LATENCY_OUTPUT')
    if not output:
        return
    try:
        with open(output) as existing:
            results = json.load(existing)
    except (OSError, ValueError):
        results = {}
    place = results
    for key in keys[:-1]:
        place = place.setdefault(key, {})
    place[keys[-1]] = value
    with open(output, 'w') as out:
        json.dump(results, out, indent=2, sort_keys=True)


def _json(output):
    # --wait prints its progress ("Complete") before the JSON.
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line[:1] in ('{', '['):
            return json.loads('\n'.join(lines[index:]))
    raise CloudError('no JSON in: %s' % output)


class Cloud(object):
    """One minicloud, as its users and operator reach it."""

    def __init__(self, description):
        self.description = description
        self.workdir = description['workdir']
        self.image_id = description['image_id']
        self._connections = {}

    def _env(self):
        env = dict(os.environ)
        env['OS_CLIENT_CONFIG_FILE'] = self.description['clouds_yaml']
        return env

    def _bin(self, name):
        return os.path.join(self.description['venv'], 'bin', name)

    # -- the openstack CLI -------------------------------------------------

    def osc(self, cloud, *args, microversion=None, check=True):
        """Run ``openstack``; :returns: its JSON output, or the process."""
        command = [self._bin('openstack'), '--os-cloud', cloud]
        if microversion:
            command += ['--os-compute-api-version', microversion]
        command += list(args)
        done = subprocess.run(command, capture_output=True, text=True,
                              env=self._env(), timeout=300)
        if not check:
            return done
        if done.returncode:
            raise CloudError('%s: exit %s\n%s%s' % (
                ' '.join(args), done.returncode, done.stdout, done.stderr))
        return _json(done.stdout) if '-f' in args else done.stdout

    # -- openstacksdk ------------------------------------------------------

    def sdk(self, cloud):
        if cloud not in self._connections:
            os.environ['OS_CLIENT_CONFIG_FILE'] = \
                self.description['clouds_yaml']
            self._connections[cloud] = openstack.connect(cloud=cloud)
        return self._connections[cloud]

    def compute(self, cloud, method, path, body=None,
                microversion=MICROVERSION):
        """A raw compute API call; :returns: (status, JSON body, seconds)."""
        conn = self.sdk(cloud)
        headers = {'OpenStack-API-Version': 'compute %s' % microversion}
        started = time.monotonic()
        response = conn.compute.request(
            path, method, json=body, headers=headers,
            raise_exc=False, microversion=microversion)
        seconds = time.monotonic() - started
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return response.status_code, answer, seconds

    def token(self, cloud):
        return self.sdk(cloud).session.get_token()

    def compute_url(self, api='nova-api-1'):
        return 'http://127.0.0.1:%d/v2.1' % self.description['ports'][api]

    def curl(self, cloud, method, path, body=None, api='nova-api-1',
             microversion=MICROVERSION):
        """The same call with curl; :returns: (status, JSON body)."""
        command = ['curl', '-s', '-o', '-', '-w', '\n%{http_code}',
                   '-X', method, self.compute_url(api) + path,
                   '-H', 'X-Auth-Token: ' + self.token(cloud),
                   '-H', 'Content-Type: application/json',
                   '-H', 'OpenStack-API-Version: compute ' + microversion]
        if body is not None:
            command += ['-d', json.dumps(body)]
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=300, check=True)
        text, _, status = done.stdout.rpartition('\n')
        return int(status), json.loads(text) if text.strip() else None

    def placement_allocations(self, consumer):
        conn = self.sdk('admin')
        response = conn.placement.get(
            '/allocations/%s' % consumer,
            headers={'OpenStack-API-Version': 'placement 1.28'})
        return response.json()['allocations']

    def database(self, name):
        """A connection of our own to one of the cloud's databases."""
        import pymysql
        return pymysql.connect(
            host='127.0.0.1', port=self.description['ports']['mariadb'],
            user='cloud', password=self.description['password'],
            database=name, autocommit=True)

    # -- RabbitMQ ------------------------------------------------------

    def rabbitmqctl(self, *args):
        rabbitmq = self.description['rabbitmq']
        env = dict(os.environ, **rabbitmq['env'])
        return subprocess.run(
            [RABBITMQCTL, '-n', rabbitmq['nodename']] + list(args),
            capture_output=True, text=True, env=env, timeout=60)

    def queues(self):
        """{queue name: (consumers, messages)}."""
        done = self.rabbitmqctl('list_queues', '-q', '--no-table-headers',
                                'name', 'consumers', 'messages')
        found = {}
        for line in done.stdout.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[1].isdigit():
                found[fields[0]] = (int(fields[1]), int(fields[2]))
        return found

    # -- the operator's console scripts ---------------------------------

    def manage(self, *args, check=True):
        return self._console('nova-cell0-rebuild-manage', args, check)

    def status(self, *args, check=True):
        return self._console('nova-cell0-rebuild-status', args, check)

    def _console(self, program, args, check):
        command = [self._bin(program), '--config-file',
                   self.description['nova_conf']] + list(args)
        env = self._env()
        env.update(self.description.get('nova_api_env', {}))
        done = subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=300)
        if check and done.returncode:
            # Its own output last: CI prints the tail of a failure, and
            # the stderr of a console script is mostly import warnings.
            raise CloudError('%s %s: exit %s\nits stderr:\n%s\nits '
                             'stdout:\n%s' % (
                                 program, ' '.join(args), done.returncode,
                                 done.stderr, done.stdout))
        return done

    def service(self, action, name):
        """``minicloud.py kill|stop|restart NAME``."""
        env = dict(os.environ, MINICLOUD_PORT_BASE=str(
            self.description['ports']['keystone']))
        subprocess.run([sys.executable, os.path.join(
            SOURCE_TREE, 'tools', 'minicloud', 'minicloud.py'), action,
            name, self.workdir], check=True, timeout=300, env=env)
