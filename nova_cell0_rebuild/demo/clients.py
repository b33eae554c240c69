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

"""keystoneauth adapters for the demo's users, its reaper and placement.

They are what a client of a real cloud builds from a Keystone session. The
demo has no Keystone: the compute identity goes in the headers
keystonemiddleware would set, which only the loopback sandbox trusts, and
the in-process placement takes a fixed token.
"""

from keystoneauth1 import adapter
from keystoneauth1 import session

ADMIN_ROLES = 'admin,member,reader'


def compute(endpoint, project, microversion, user=None,
            roles='member,reader'):
    """An Adapter for Nova as *user* (default ``<project>-user``).

    ``raise_exc`` is off: callers look at each answer's status.
    """
    return adapter.Adapter(
        session.Session(), service_type='compute',
        endpoint_override=endpoint, default_microversion=microversion,
        additional_headers={'X-User-Id': user or '%s-user' % project,
                            'X-Project-Id': project, 'X-Roles': roles},
        raise_exc=False)


def admin_compute(endpoint, microversion):
    """An Adapter for Nova as the cloud's admin."""
    return compute(endpoint, 'admin', microversion, user='admin',
                   roles=ADMIN_ROLES)


def placement(endpoint, token):
    """An Adapter for placement."""
    return adapter.Adapter(
        session.Session(), service_type='placement',
        endpoint_override=endpoint, additional_headers={'X-Auth-Token': token},
        raise_exc=False)
