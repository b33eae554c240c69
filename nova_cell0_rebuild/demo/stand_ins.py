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

"""Keystone and Glance stand-ins, so stock clients log in to the sandbox.

The openstack CLI, python-novaclient and openstacksdk find Nova and the
image service in a Keystone catalog, and look an image up in Glance before
they rebuild with it. These two small WSGI applications answer just that:

* :class:`IdentityStandIn`: Keystone v3's version documents and
  ``POST /v3/auth/tokens``. There are no passwords: the token it issues is
  the user's name when the sandbox knows it (:data:`TOKENS`), else
  ``member``, and the token alone decides the identity
  (:mod:`.sandbox`). The catalog lists this sandbox's compute, image and
  identity endpoints.
* :class:`ImageStandIn`: Glance v2's read-only image look-ups (show, list
  by id or name) over the images of Nova's stub Glance.

SANDBOX ONLY: anyone who can connect can log in as anyone.
"""

import collections
import datetime
import json
import urllib.parse

#: A caller as Nova's harness sees it: user, project, roles (a comma list).
Identity = collections.namedtuple('Identity', 'user project roles')

#: Tokens the sandbox knows, and the identity each one stands for. Nova's
#: harness makes a request context an admin one only for the user named
#: ``admin``; both identities need that to see other projects' servers.
TOKENS = {
    # A reaper: the service role, and admin to rebuild any project's server.
    'reaper': Identity('admin', 'service', 'service,admin,member,reader'),
    'admin': Identity('admin', 'admin', 'admin,member,reader'),
}
#: The token of every other user: a member of the project its headers name
#: (by default this one).
MEMBER_TOKEN = 'member'
MEMBER = Identity('sandbox-user', 'sandbox', 'member,reader')

#: The path prefixes the sandbox serves them under.
IDENTITY_PREFIX = '/identity'
IMAGE_PREFIX = '/image'


def _json(start_response, status, body, headers=()):
    data = json.dumps(body).encode('utf-8')
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))] +
                   list(headers))
    return [data]


def _not_found(start_response):
    return _json(start_response, '404 Not Found',
                 {'error': {'code': 404, 'message': 'Not found.'}})


def _base_url(environ):
    """The sandbox's own URL, as the client reached it."""
    return '%s://%s' % (environ.get('wsgi.url_scheme', 'http'),
                        environ['HTTP_HOST'])


def _isoformat(value):
    if isinstance(value, datetime.datetime):
        return value.strftime('%Y-%m-%dT%H:%M:%SZ')
    return value


class IdentityStandIn(object):
    """Keystone v3, as far as logging in and the catalog go."""

    def _version(self, base):
        return {'id': 'v3.14', 'status': 'stable',
                'updated': '2020-04-07T00:00:00Z',
                'links': [{'rel': 'self',
                           'href': base + IDENTITY_PREFIX + '/v3/'}],
                'media-types': [{
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.identity-v3+json'}]}

    def _catalog(self, base):
        def service(kind, url):
            return {'type': kind, 'name': kind, 'id': kind,
                    'endpoints': [{'id': '%s-%s' % (kind, interface),
                                   'interface': interface,
                                   'region': 'RegionOne',
                                   'region_id': 'RegionOne', 'url': url}
                                  for interface in ('public', 'internal',
                                                    'admin')]}
        return [service('compute', base + '/v2.1'),
                service('image', base + IMAGE_PREFIX),
                service('identity', base + IDENTITY_PREFIX + '/v3')]

    @staticmethod
    def token_for(auth):
        """The token a v3 auth request gets: a known name's, or member's."""
        identity = auth.get('identity', {})
        if 'token' in identity.get('methods', ()):
            asked = identity.get('token', {}).get('id')
        else:
            user = identity.get('password', {}).get('user', {})
            asked = user.get('name') or user.get('id')
        return asked if asked in TOKENS else MEMBER_TOKEN

    def _token(self, base, environ, start_response):
        try:
            length = int(environ.get('CONTENT_LENGTH') or 0)
            auth = json.loads(environ['wsgi.input'].read(length))['auth']
        except (ValueError, KeyError, TypeError):
            return _json(start_response, '400 Bad Request',
                         {'error': {'code': 400,
                                    'message': 'Expected {"auth": ...}.'}})
        token = self.token_for(auth)
        who = TOKENS.get(token, MEMBER)
        now = datetime.datetime.now(datetime.timezone.utc)
        domain = {'id': 'default', 'name': 'Default'}
        body = {'token': {
            'methods': auth.get('identity', {}).get('methods', []),
            'user': {'id': who.user, 'name': who.user, 'domain': domain},
            'project': {'id': who.project, 'name': who.project,
                        'domain': domain},
            'roles': [{'id': role, 'name': role}
                      for role in who.roles.split(',')],
            'catalog': self._catalog(base),
            'issued_at': _isoformat(now),
            'expires_at': _isoformat(now + datetime.timedelta(days=1))}}
        return _json(start_response, '201 Created', body,
                     [('X-Subject-Token', token)])

    def __call__(self, environ, start_response):
        base = _base_url(environ)
        path = environ.get('PATH_INFO', '').rstrip('/')
        method = environ['REQUEST_METHOD']
        if path == '' and method == 'GET':
            return _json(start_response, '300 Multiple Choices',
                         {'versions': {'values': [self._version(base)]}})
        if path == '/v3' and method == 'GET':
            return _json(start_response, '200 OK',
                         {'version': self._version(base)})
        if path == '/v3/auth/tokens' and method == 'POST':
            return self._token(base, environ, start_response)
        return _not_found(start_response)


class ImageStandIn(object):
    """Glance v2's image look-ups, read-only, from Nova's stub Glance.

    :param glance: Nova's ``GlanceFixture`` (its ``detail()``).
    """

    def __init__(self, glance):
        self.glance = glance

    @staticmethod
    def _view(image):
        view = {key: _isoformat(value) for key, value in image.items()
                if key not in ('properties', 'deleted', 'deleted_at',
                               'is_public')}
        view.update(image.get('properties', {}))
        view.update({'self': '/v2/images/%s' % image['id'],
                     'file': '/v2/images/%s/file' % image['id'],
                     'schema': '/v2/schemas/image'})
        return view

    @staticmethod
    def _matches(image, query):
        for key in ('id', 'name'):
            for value in query.get(key, ()):
                wanted = (value[3:].split(',') if value.startswith('in:')
                          else [value])
                if image.get(key) not in wanted:
                    return False
        return True

    def __call__(self, environ, start_response):
        base = _base_url(environ) + IMAGE_PREFIX
        path = environ.get('PATH_INFO', '').rstrip('/')
        if environ['REQUEST_METHOD'] != 'GET':
            return _json(start_response, '405 Method Not Allowed',
                         {'error': {'code': 405,
                                    'message': 'The sandbox is read-only.'}})
        if path == '':
            return _json(start_response, '300 Multiple Choices', {
                'versions': [{'id': 'v2.16', 'status': 'CURRENT',
                              'links': [{'rel': 'self',
                                         'href': base + '/v2/'}]}]})
        images = [self._view(image) for image in self.glance.detail(None)]
        if path == '/v2/images':
            query = urllib.parse.parse_qs(environ.get('QUERY_STRING', ''))
            # Paging ends at once: every image fits in one page.
            if query.get('marker'):
                images = []
            return _json(start_response, '200 OK', {
                'images': [image for image in images
                           if self._matches(image, query)],
                'first': '/v2/images', 'schema': '/v2/schemas/images'})
        for image in images:
            if path == '/v2/images/%s' % image['id']:
                return _json(start_response, '200 OK', image)
        return _not_found(start_response)
