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

"""Adapter for Nova's compute API layer.

Microversions, request schemas, policy, the translation of "networks", and
the server view and faults Nova answers with.
"""

import microversion_parse
from nova.api.openstack import api_version_request
from nova.api.openstack.compute import servers as servers_api
from nova.api.openstack import wsgi as nova_wsgi
from nova.api.validation import validators
from nova import exception as nova_exception
from nova import policy as nova_policy
from oslo_config import cfg
import webob
import webob.exc

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_release
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import policies

CONF = cfg.CONF

#: Nova's rule for rebuilding a server, and for giving trusted certificates.
NOVA_REBUILD_RULE = 'os_compute_api:servers:rebuild'
NOVA_REBUILD_TRUSTED_CERTS_RULE = (
    'os_compute_api:servers:rebuild:trusted_certs')

_CONTROLLER = None
# id(schema) -> (schema, validator): Nova's schemas are module constants.
_VALIDATORS = {}


def _servers_controller():
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = servers_api.ServersController()
    return _CONTROLLER


def _nova_request(req, version):
    nova_req = nova_wsgi.Request(req.environ)
    nova_req.api_version_request = version
    return nova_req


APIVersion = api_version_request.APIVersionRequest

#: What an unversioned request to the legacy /v2 endpoint is handled as.
LEGACY_V2_VERSION = APIVersion('2.0')


def max_version():
    """The newest microversion the installed Nova supports."""
    return api_version_request.max_api_version()


def min_version():
    return api_version_request.min_api_version()


def parse(version_string):
    """Parse ``2.N``; raises ValueError when it is not a version."""
    try:
        return APIVersion(version_string)
    except nova_exception.InvalidAPIVersionString as exc:
        raise ValueError(str(exc))


def requested_version(req, legacy_v2=False):
    """The microversion a request asks for, decided as Nova decides it.

    :returns: an APIVersionRequest, or None when Nova will reject the
        request's version header (malformed or unsupported), in which case
        the plugin leaves the request to Nova.
    """
    if legacy_v2:
        return LEGACY_V2_VERSION
    header = microversion_parse.get_version(
        req.headers, service_type='compute',
        legacy_headers=[nova_wsgi.LEGACY_API_VERSION_REQUEST_HEADER])
    if header is None:
        return APIVersion(api_version_request.DEFAULT_API_VERSION)
    if header == 'latest':
        return max_version()
    try:
        version = APIVersion(header)
    except nova_exception.InvalidAPIVersionString:
        return None
    if not version.matches(min_version(), max_version()):
        return None
    return version


def fault(req, http_error, version=None):
    """Answer *req* with a Nova-style JSON fault.

    :param http_error: a ``webob.exc.HTTPError`` carrying the explanation.
    :param version: the request's microversion, echoed in the response
        headers as Nova does; None for an unversioned answer.
    """
    nova_req = nova_wsgi.Request(req.environ)
    if version is not None:
        nova_req.api_version_request = version
    return nova_req.get_response(nova_wsgi.Fault(http_error))


def _validator(schema, is_body=True):
    """Nova's validator for a schema, built once per schema as Nova's
    decorators do (building one compiles the schema's formats).

    :param is_body: False for a query string schema: Nova's messages then
        name the query parameter.
    """
    key = (id(schema), is_body)
    cached = _VALIDATORS.get(key)
    if cached is None or cached[0] is not schema:
        cached = (schema, validators._SchemaValidator(schema, False,
                                                      is_body))
        _VALIDATORS[key] = cached
    return cached[1]


def validate_query(req, schema):
    """Validate a query string as Nova's ``query_schema`` decorator does.

    Every value is a list (a parameter may be repeated), as Nova gives
    its schemas; the schema says which take one value only.

    :returns: {name: [values]}, valid against *schema*.
    :raises: RequestRefused(400) with Nova's message, also for a query
        string that is not UTF-8.
    """
    try:
        query = req.GET.dict_of_lists()
    except UnicodeDecodeError:
        # Nova's own words (nova.api.validation.query_schema).
        raise exception.RequestRefused(
            400, _('Query string is not UTF-8 encoded'))
    try:
        _validator(schema, is_body=False).validate(query)
    except nova_exception.ValidationError as exc:
        raise exception.RequestRefused(400, exc.format_message())
    return query


def validate_body(body, schema):
    """Validate a request body of ours as Nova's ``schema`` decorator does.

    :raises: RequestRefused(400) with Nova's message.
    """
    try:
        _validator(schema).validate(body)
    except nova_exception.ValidationError as exc:
        raise exception.RequestRefused(400, exc.format_message())


def validate_rebuild_body(req, body, version):
    """Validate a rebuild action body with Nova's schema for *version*.

    :raises: RequestRefused(400) with Nova's message.
    """
    schemas = nova_release.rebuild_request_schemas()
    schema = schemas(_nova_request(req, version))
    try:
        _validator(schema).validate(body)
    except nova_exception.ValidationError as exc:
        raise exception.RequestRefused(400, exc.format_message())
    except ValueError as exc:
        # Nova's base64 format check lets UnicodeDecodeError out (a 500 in
        # Nova's own API) for non-ASCII text in user_data.
        raise exception.RequestRefused(400, _(
            'Invalid input for a base64 field: %s') % exc)


def content_type_supported(req):
    """Whether Nova takes the request body's Content-Type (else 415)."""
    try:
        nova_wsgi.Request(req.environ).get_content_type()
    except nova_exception.InvalidContentType:
        return False
    return True


#: Nova's enforcer our rules were last registered on.
_registered_on = None


def _enforcer():
    """Nova's enforcer, with our rules registered on it once.

    Our rules are checked through Nova's enforcer, so that operators
    override them in Nova's policy file like any Nova rule. Nova builds a
    new enforcer only after ``nova.policy.reset()`` (tests, a policy
    reload): only then are our rules registered again.
    """
    global _registered_on
    nova_policy.init()
    enforcer = nova_policy._ENFORCER
    if enforcer is not _registered_on:
        for rule in policies.list_rules():
            if rule.name not in enforcer.registered_rules:
                enforcer.register_default(rule)
        _registered_on = enforcer
    return enforcer


def authorize(context, rule, target):
    """Check a rule, Nova's or ours, for the caller.

    :raises: RequestRefused(403) with Nova's message.
    """
    _enforcer()
    try:
        context.can(rule, target=target)
    except nova_exception.PolicyNotAuthorized as exc:
        raise exception.RequestRefused(403, exc.format_message())


def max_limit():
    """The most items Nova answers in one page (``[api] max_limit``)."""
    return CONF.api.max_limit


def allowed(context, rule, target):
    """Whether the caller holds a rule, Nova's or ours; never raises."""
    _enforcer()
    return context.can(rule, target=target, fatal=False)


def requested_networks(networks):
    """Nova's NetworkRequestList for a create's "networks" value, or None.

    ``None`` (no "networks" in the create) stays None, which lets Neutron
    allocate as it did for the original create.
    """
    if networks is None:
        return None
    try:
        return _servers_controller()._get_requested_networks(networks)
    except webob.exc.HTTPBadRequest as exc:
        raise exception.RequestRefused(400, exc.explanation)


def _since(req, version_string):
    return api_version_request.is_supported(req, version_string)


def rebuild_response(req, version, server_id, admin_password,
                     build_request=None):
    """Nova's 202 answer to a rebuild, for the server as it is now.

    Built with Nova's own view builder and the same choices Nova's rebuild
    handler makes for each microversion.

    :param build_request: the BuildRequest just written for the server:
        its instance is the one Nova's ``GET`` would read back. Without it
        the server is looked up.
    """
    nova_req = _nova_request(req, version)
    controller = _servers_controller()
    context = nova_req.environ['nova.context']
    bdms = None
    if build_request is not None:
        instance = build_request.instance
        # Nova reads the volumes of a server from the database of the
        # cell it is in; an unmapped server has BDM rows in none (its BDMs
        # are in its BuildRequest), so Nova's GET shows no volumes yet.
        bdms = {server_id: []}
    else:
        instance = controller._get_server(context, nova_req, server_id,
                                          is_detail=True)
    show_all = _since(nova_req, '2.75')
    view = controller._view_builder.show(
        nova_req, instance,
        extend_address=show_all, show_AZ=show_all,
        show_config_drive=show_all,
        show_extended_attr=None if show_all else False,
        show_host_status=None if show_all else False,
        show_keypair=_since(nova_req, '2.54'), show_srv_usg=show_all,
        show_sec_grp=show_all, show_extended_status=show_all,
        show_extended_volumes=show_all,
        show_server_groups=_since(nova_req, '2.71'),
        show_user_data=False, bdms=bdms)
    if CONF.api.enable_instance_password:
        view['server']['adminPass'] = admin_password
    if _since(nova_req, '2.57'):
        view['server']['user_data'] = instance.user_data
    robj = nova_wsgi.ResponseObject(view, code=202)
    servers_api.ServersController._add_location(robj)
    resp = robj.serialize(nova_req, 'application/json')
    _add_version_headers(resp, version)
    return resp


def _add_version_headers(resp, version):
    resp.headers[nova_wsgi.API_VERSION_REQUEST_HEADER] = (
        'compute ' + version.get_string())
    resp.headers[nova_wsgi.LEGACY_API_VERSION_REQUEST_HEADER] = (
        version.get_string())
    resp.headers.add('Vary', nova_wsgi.API_VERSION_REQUEST_HEADER)
    resp.headers.add('Vary', nova_wsgi.LEGACY_API_VERSION_REQUEST_HEADER)
