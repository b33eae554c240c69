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

"""Adapter for Nova's RequestContext of a service user, for our commands.

nova-api builds a request's context from the token keystonemiddleware
validated (``nova.api.auth.NovaKeystoneContext``). An operator command has
no request: ``nova.context.get_admin_context()`` carries no token and no
catalog, and Nova's Glance client, which has no credentials of its own,
then cannot authenticate. So the command authenticates with keystoneauth
itself and builds the context nova-api would have built from that token.
"""

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from nova.conf import service_token
from nova import context as nova_context
from oslo_config import cfg
from oslo_log import log as logging

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.conf import cell0_rebuild_client
from nova_cell0_rebuild import exception

LOG = logging.getLogger(__name__)

#: Nova's section of its service user's credentials.
FALLBACK_GROUP = service_token.SERVICE_USER_GROUP

#: The sections read for credentials, the first one with auth_type wins.
SECTIONS = (cell0_rebuild_client.GROUP_NAME, FALLBACK_GROUP)


def service_context(conf):
    """Authenticate as the service user and return its RequestContext.

    The credentials are those of ``[cell0_rebuild_client]``, or those of
    Nova's ``[service_user]`` when its ``auth_type`` is not set.

    :param conf: a ConfigOpts with the plugin's options registered.
    :returns: an admin ``nova.context.RequestContext`` with the user's
        token, roles and service catalog, whose ``user_auth_plugin`` is the
        authenticated plugin: Nova's Glance, Cinder and Neutron clients use
        it (``RequestContext.get_auth_plugin``).
    :raises: ServiceCredentialsMissing when neither section sets auth_type;
        ServiceCredentialsInvalid when the credentials cannot be loaded or
        get no project-scoped token; ServiceAuthenticationFailed when
        Keystone refuses them or cannot be reached.
    """
    group, auth = _load_auth(conf)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    try:
        access = auth.get_access(session)
    except ks_exceptions.ClientException as exc:
        raise exception.ServiceAuthenticationFailed(
            group=group, auth_url=getattr(auth, 'auth_url', None) or
            _('(no auth_url)'), reason=_one_line(exc))
    if not access.project_scoped:
        raise exception.ServiceCredentialsInvalid(group=group, reason=_(
            'the token is not scoped to a project; set project_name and '
            'project_domain_name (or project_id).'))
    if 'admin' not in access.role_names:
        LOG.warning('The user %s of [%s] has no admin role (roles: %s): '
                    'Glance, Cinder and Neutron may refuse what belongs to '
                    'other projects.', access.username or access.user_id,
                    group, ', '.join(access.role_names))
    return nova_context.RequestContext(
        user_id=access.user_id, project_id=access.project_id,
        user_name=access.username, project_name=access.project_name,
        user_domain_id=access.user_domain_id,
        project_domain_id=access.project_domain_id,
        roles=access.role_names, auth_token=access.auth_token,
        is_admin=True, service_catalog=context_catalog(access),
        user_auth_plugin=auth)


def _load_auth(conf):
    """(section, auth plugin) of the first section that sets auth_type."""
    _register_fallback(conf)
    for group in SECTIONS:
        try:
            auth = ks_loading.load_auth_from_conf_options(conf, group)
        except ks_exceptions.ClientException as exc:
            raise exception.ServiceCredentialsInvalid(
                group=group, reason=_one_line(exc))
        if auth is not None:
            LOG.debug('Authenticating with the credentials of [%s]', group)
            return group, auth
    raise exception.ServiceCredentialsMissing(group=SECTIONS[0],
                                              fallback=SECTIONS[1])


def _register_fallback(conf):
    """Nova's [service_user] section, on a ConfigOpts that has none.

    Nova registers it on its global CONF. Not with Nova's own OptGroup:
    that one would share the options keystoneauth loads with Nova's CONF.
    """
    if FALLBACK_GROUP in conf:
        return
    conf.register_group(cfg.OptGroup(FALLBACK_GROUP))
    ks_loading.register_session_conf_options(conf, FALLBACK_GROUP)
    ks_loading.register_auth_conf_options(conf, FALLBACK_GROUP)


def context_catalog(access):
    """The token's catalog in the form nova-api's contexts carry it.

    keystonemiddleware hands nova-api a v3 catalog in the v2 form (one
    entry per region with ``publicURL``, ``internalURL``, ``adminURL``),
    and that is what a context takes to the conductor and the computes,
    which read it as a v2 catalog (``nova.context._ContextAuthPlugin``).

    :param access: a keystoneauth AccessInfo.
    :returns: a list of services; Nova's RequestContext keeps those it uses.
    """
    if not access.has_service_catalog():
        return []
    catalog = access.service_catalog.catalog
    if access.version != 'v3':
        return catalog
    services = []
    for v3_service in catalog:
        service = {'type': v3_service['type']}
        if 'name' in v3_service:
            service['name'] = v3_service['name']
        regions = {}
        for endpoint in v3_service.get('endpoints', []):
            name = endpoint.get('region')
            region = regions.setdefault(name, {'region': name} if name else {})
            region[endpoint['interface'].lower() + 'URL'] = endpoint['url']
        service['endpoints'] = list(regions.values())
        services.append(service)
    return services


def _one_line(exc):
    """The first line of an exception's message, or its class name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
