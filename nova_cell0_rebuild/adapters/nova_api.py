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

"""Adapter for Nova's compute API layer: microversions."""

import microversion_parse
from nova.api.openstack import api_version_request
from nova.api.openstack import wsgi as nova_wsgi
from nova import exception as nova_exception

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
