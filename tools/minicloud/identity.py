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

"""Keystone's users, projects, roles and catalog, made with openstacksdk.

``keystone-manage bootstrap`` made the admin user, the roles (reader,
member, manager, admin, service) and the identity endpoint. One sdk
connection then makes the rest: far quicker than one ``openstack`` process
per call.
"""

import openstack

import configs

#: user -> (project, roles). The service users hold admin and service on
#: the service project, as devstack gives them.
USERS = {
    'nova': ('service', ['admin', 'service']),
    'placement': ('service', ['admin', 'service']),
    'glance': ('service', ['admin', 'service']),
    # Stock Aardvark (tests/cloud/test_aardvark.py): admin for its
    # all-projects listings, service for the plugin's reaper path.
    'aardvark': ('service', ['admin', 'service']),
    'demo-member': ('demo', ['member']),
    'demo-reader': ('demo', ['reader']),
    'other-member': ('other', ['member']),
}
#: service type -> (name, URL of its endpoints)
SERVICES = {
    'compute': ('nova', configs.url('nova-api-1', '/v2.1')),
    'placement': ('placement', configs.url('placement')),
    'image': ('glance', configs.url('glance')),
    'network': ('neutron', configs.url('neutron')),
}


def admin_connection():
    return openstack.connect(
        auth_url=configs.url('keystone'), username='admin',
        password=configs.PASSWORD, project_name='admin',
        user_domain_name='Default', project_domain_name='Default',
        region_name=configs.REGION, identity_interface='public')


def create_all():
    """Make the projects, users, role assignments, services, endpoints."""
    conn = admin_connection()
    identity = conn.identity
    roles = {role.name: role for role in identity.roles()}
    projects = {}
    for name in sorted({project for project, _ in USERS.values()}):
        projects[name] = identity.create_project(
            name=name, domain_id='default')
    for name, (project, role_names) in USERS.items():
        user = identity.create_user(name=name, password=configs.PASSWORD,
                                    domain_id='default',
                                    default_project_id=projects[project].id)
        for role_name in role_names:
            identity.assign_project_role_to_user(
                projects[project], user, roles[role_name])
    for service_type, (name, endpoint_url) in SERVICES.items():
        service = identity.create_service(name=name, type=service_type)
        for interface in ('public', 'internal', 'admin'):
            identity.create_endpoint(
                service_id=service.id, interface=interface,
                url=endpoint_url, region_id=configs.REGION)
    conn.close()


def clouds_yaml():
    """clouds.yaml for the openstack CLI and openstacksdk.

    One cloud per user; ``<user>-api2`` sends compute calls to the second
    nova-api.
    """
    clouds = {'admin': ('admin', 'admin')}
    clouds.update({name: (name, project)
                   for name, (project, _) in USERS.items()
                   if project != 'service'})
    lines = ['clouds:']
    for cloud, (user, project) in sorted(clouds.items()):
        for suffix, extra in (('', None),
                              ('-api2', configs.url('nova-api-2', '/v2.1'))):
            lines += ['  %s%s:' % (cloud, suffix),
                      '    region_name: %s' % configs.REGION,
                      '    identity_api_version: 3',
                      '    auth:',
                      '      auth_url: %s' % configs.url('keystone'),
                      '      username: %s' % user,
                      '      password: %s' % configs.PASSWORD,
                      '      project_name: %s' % project,
                      '      user_domain_name: Default',
                      '      project_domain_name: Default']
            if extra:
                lines.append('    compute_endpoint_override: %s' % extra)
    return '\n'.join(lines) + '\n'
