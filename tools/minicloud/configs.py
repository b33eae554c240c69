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

"""The configuration files of the minicloud's services.

Everything listens on 127.0.0.1 on the ports of :data:`PORTS`, chosen away
from the usual ones so a cloud or a demo already running here is left
alone. Each service's Keystone user is in :data:`SERVICE_USERS`.
"""

import os

#: First port; MINICLOUD_PORT_BASE moves them all, so that two clouds (a
#: developer's and a CI run's) can run side by side.
PORT_BASE = int(os.environ.get('MINICLOUD_PORT_BASE', '25000'))
PORTS = {name: PORT_BASE + offset for name, offset in {
    'keystone': 0,
    'nova-api-1': 774,
    'nova-api-2': 775,
    'glance': 292,
    'mariadb': 306,
    'rabbitmq': 672,  # and its distribution port, one above
    'neutron': 696,
    'placement': 778,
}.items()}
#: Aardvark all_in_one's job board: its port is fixed.
PORTS['redis'] = 6379
SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
#: Where Nova's databases are: ``mariadb`` (one server), or ``galera``: a
#: three-node cluster behind HAProxy (galera.py).
DATABASE = os.environ.get('MINICLOUD_DATABASE', 'mariadb')
#: The cluster's own directory and port offset (tools/ci/galera-cluster.sh):
#: not those of tox -e galera's cluster, which may run at the same time.
GALERA_PORT_OFFSET = int(os.environ.get('MINICLOUD_GALERA_PORT_OFFSET',
                                        '1000'))
GALERA_BASE = os.environ.get(
    'MINICLOUD_GALERA_BASE',
    '/tmp/nova-cell0-rebuild-galera/minicloud-%d' % PORT_BASE)
PORTS.update({'galera-haproxy': 13300 + GALERA_PORT_OFFSET,
              'galera-stats': 13399 + GALERA_PORT_OFFSET})
PORTS.update({'galera-n%d' % n: 13305 + GALERA_PORT_OFFSET + n
              for n in (1, 2, 3)})
#: The databases Nova and placement keep on the cluster in galera mode.
GALERA_DATABASES = ('placement', 'nova_api', 'nova_cell0', 'nova_cell1')
#: Two copies of nova-cell0-rebuild-pending run, but not in galera mode.
PENDING = DATABASE != 'galera'
PENDING_COPIES = ('pending-1', 'pending-2')
PASSWORD = 'minicloud-secret'
REGION = 'RegionOne'
SERVICE_USERS = ('nova', 'placement', 'glance')


def url(service, path=''):
    return 'http://127.0.0.1:%d%s' % (PORTS[service], path)


def database_url(name, galera_node=None):
    """The URL of one database of the cloud.

    :param galera_node: in galera mode, a node (1..3) to reach directly
        instead of HAProxy.
    """
    port = PORTS['mariadb']
    if DATABASE == 'galera' and name in GALERA_DATABASES:
        port = PORTS['galera-n%d' % galera_node if galera_node
                     else 'galera-haproxy']
    return 'mysql+pymysql://cloud:%s@127.0.0.1:%d/%s?charset=utf8mb4' % (
        PASSWORD, port, name)


TRANSPORT_URL = 'rabbit://guest:guest@127.0.0.1:%d/' % PORTS['rabbitmq']


def ini(sections):
    """An ini file's text from {section: {option: value}}."""
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % (key, value)
                     for key, value in options.items())
        lines.append('')
    return '\n'.join(lines)


def _auth(username):
    return {
        'auth_type': 'password',
        'auth_url': url('keystone'),
        'username': username,
        'password': PASSWORD,
        'project_name': 'service',
        'user_domain_name': 'Default',
        'project_domain_name': 'Default',
    }


def authtoken(username):
    section = _auth(username)
    section.update({'www_authenticate_uri': url('keystone'),
                    'service_token_roles_required': 'true'})
    return section


def keystone_conf(workdir):
    keys = os.path.join(workdir, 'keystone')
    return ini({
        'DEFAULT': {'log_file': os.path.join(workdir, 'logs',
                                             'keystone-app.log')},
        'database': {'connection': database_url('keystone')},
        'token': {'provider': 'fernet'},
        'fernet_tokens': {'key_repository': os.path.join(keys, 'fernet')},
        'fernet_receipts': {
            'key_repository': os.path.join(keys, 'receipts')},
        'credential': {'key_repository': os.path.join(keys, 'credential')},
    })


def placement_conf(workdir):
    return ini({
        'DEFAULT': {'log_file': os.path.join(workdir, 'logs',
                                             'placement-app.log')},
        'api': {'auth_strategy': 'keystone'},
        'placement_database': {'connection': database_url('placement')},
        'keystone_authtoken': authtoken('placement'),
    })


def glance_conf(workdir):
    images = os.path.join(workdir, 'glance')
    return ini({
        'DEFAULT': {
            'log_file': os.path.join(workdir, 'logs', 'glance-app.log'),
            'enabled_backends': 'fs:file',
            'bind_host': '127.0.0.1', 'bind_port': PORTS['glance'],
        },
        'glance_store': {'default_backend': 'fs'},
        'fs': {'filesystem_store_datadir': os.path.join(images, 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': os.path.join(images, 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': os.path.join(images, 'tasks')},
        'database': {'connection': database_url('glance')},
        'keystone_authtoken': authtoken('glance'),
        'paste_deploy': {
            'flavor': 'keystone',
            'config_file': os.path.join(workdir, 'etc', 'glance',
                                        'glance-api-paste.ini')},
    })


def nova_conf(workdir, api_galera_node=None):
    """nova.conf of every Nova service (computes add their own file).

    :param api_galera_node: in galera mode, the node the API database is
        reached at directly (nova-api-2's), instead of through HAProxy.
    """
    nova = os.path.join(workdir, 'nova')
    return ini({
        'DEFAULT': {
            'transport_url': TRANSPORT_URL,
            'state_path': os.path.join(nova, 'state'),
            'compute_driver': 'fake.SmallFakeDriver',
            'my_ip': '127.0.0.1',
            # A cloud at rest: no periodic audit of every compute.
            'heal_instance_info_cache_interval': '-1',
            # The scheduler of two fake computes answers in seconds; kept
            # below [cell0_rebuild] hand_off_timeout, as the upgrade check
            # requires of every cloud.
            'long_rpc_timeout': '20',
        },
        'api': {'auth_strategy': 'keystone'},
        'api_database': {'connection': database_url(
            'nova_api', galera_node=api_galera_node)},
        'database': {'connection': database_url('nova_cell1')},
        'keystone_authtoken': authtoken('nova'),
        'service_user': dict(_auth('nova'),
                             send_service_user_token='true'),
        'placement': dict(_auth('nova'), region_name=REGION),
        'neutron': dict(_auth('nova'), region_name=REGION),
        'glance': {'region_name': REGION},
        'cinder': {'os_region_name': REGION},
        'oslo_concurrency': {'lock_path': os.path.join(nova, 'locks')},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        # Queues that outlive a RabbitMQ restart, as production runs them:
        # with transient queues a cast sent while a consumer reconnects is
        # dropped, for a create as for a rebuild.
        'oslo_messaging_rabbit': {'rabbit_quorum_queue': 'true'},
        'notifications': {'notification_format': 'both'},
        'scheduler': {'discover_hosts_in_cells_interval': '-1'},
        'conductor': {'workers': '1'},
        # The shortest lease and hand-off timeout, so that the scenarios
        # can heal a killed move, or a hand-off the conductor dropped
        # when its database failed over, soon.
        'cell0_rebuild': {'move_lease_seconds': '10',
                          'hand_off_timeout': '30'},
        # Waits for room (nova-cell0-rebuild-pending, tests/cloud/
        # test_pending.py): nova-api records opt-ins only while enabled.
        # Opt-in, so the scenarios that bury servers without it see no
        # change. Not in galera mode: no redis to elect a copy through,
        # and the upgrade check warns while waits are on and no copy runs.
        'cell0_rebuild_pending': (
            {'enabled': 'true', 'projects': '*'} if PENDING
            else {'enabled': 'false'}),
        'wsgi': {'api_paste_config': os.path.join(workdir, 'etc', 'nova',
                                                  'api-paste.ini')},
    })


def pending_conf():
    """The second file of nova-cell0-rebuild-pending (after nova.conf).

    The copies elect their dispatcher through the minicloud's redis. The
    sweep, the settle timeout and the back-off cap are short, so that the
    scenarios see a deadline end, or a killed copy's rebuilds settled,
    within seconds rather than minutes (spec ``pending``, "Test plan").
    """
    return ini({'cell0_rebuild_pending': {
        'coordination_url': 'redis://127.0.0.1:%d' % PORTS['redis'],
        'sweep_interval_seconds': '15',
        'settle_timeout_seconds': '15',
        'backoff_max_seconds': '10',
    }})


def compute_conf(workdir, host):
    return ini({
        'DEFAULT': {
            'host': host,
            'state_path': os.path.join(workdir, 'nova', host),
            'instances_path': os.path.join(workdir, 'nova', host,
                                           'instances'),
        },
    })


def uwsgi_command(venv, module, port, processes=1, threads=2):
    """uwsgi serving a WSGI application, as devstack runs OpenStack APIs."""
    return [os.path.join(venv, 'bin', 'uwsgi'),
            '--master', '--die-on-term', '--need-app', '--lazy-apps',
            '--enable-threads', '--thunder-lock',
            '--processes', str(processes), '--threads', str(threads),
            '--http-socket', '127.0.0.1:%d' % port,
            '--virtualenv', venv,
            '--module', module,
            '--buffer-size', '65535',
            # uwsgi's http-socket does not keep connections alive: say so,
            # or clients reuse a closed connection (ECONNRESET).
            '--add-header', 'Connection: close']
