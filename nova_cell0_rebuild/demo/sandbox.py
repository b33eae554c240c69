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

"""Nova's compute API over real HTTP on loopback, for a sandbox.

THIS IS A SANDBOX, NEVER A DEPLOYMENT. There is no Keystone: the identity
of a request (user, project, roles) is whatever the client's headers or
token say, so anyone who can connect can act as anyone, admin included.
That is why the server binds to loopback addresses only (127.0.0.0/8 and
::1) and refuses any other address (:mod:`.loopback`). Stand-ins for
Keystone and Glance (:mod:`.stand_ins`) let stock clients log in.
"""

import ipaddress

import eventlet
import eventlet.greenio
import eventlet.wsgi

from nova_cell0_rebuild.demo import stand_ins

#: The roles of a request that does not send X-Roles: a project member.
DEFAULT_ROLES = stand_ins.MEMBER.roles
#: The project of a request that names none.
DEFAULT_PROJECT = stand_ins.MEMBER.project
#: The role that makes a request the cloud's admin, when X-Roles has it.
ADMIN_ROLE = 'admin'
#: The user and project of an admin request that names neither.
ADMIN = 'admin'


class SandboxIdentity(object):
    """WSGI wrapper: the request's identity is what its headers say.

    Nova's functional harness (``OSAPIFixture``) replaces
    keystonemiddleware and builds the request context from the
    ``X-Auth-User``, ``X-Auth-Project-Id`` and ``X-Roles`` headers (and
    makes the user named ``admin`` an admin context). This wrapper also
    accepts the headers keystonemiddleware would set (``X-User-Id``,
    ``X-Project-Id``) and fills in what a client leaves out, so clients with
    no authentication at all (``auth_type none``) work too: a member
    (``member,reader``) of the request's project (``sandbox`` by default),
    user ``<project>-user``. A request is the cloud's admin only when it
    asks, with an ``X-Roles`` that has ``admin``; its user and project are
    then ``admin`` unless it names others.

    A token the sandbox knows (``X-Auth-Token``, see
    :data:`.stand_ins.TOKENS`: ``reaper``, ``admin``) stands for that
    identity instead of the defaults, so stock clients that send no such
    headers can act as the reaper or the admin; headers a request does send
    still win. Any other token, or none, changes nothing.
    """

    def __init__(self, application):
        self.application = application

    @staticmethod
    def _first(environ, names, default):
        for name in names:
            if environ.get(name):
                return environ[name]
        return default

    def __call__(self, environ, start_response):
        remote = environ.get('REMOTE_ADDR', '')
        try:
            from_loopback = ipaddress.ip_address(remote).is_loopback
        except ValueError:
            from_loopback = False
        if not from_loopback:
            start_response('403 Forbidden', [('Content-Type', 'text/plain')])
            return [b'The sandbox API only answers loopback clients.\n']
        known = stand_ins.TOKENS.get(environ.get('HTTP_X_AUTH_TOKEN'))
        roles = self._first(environ, ('HTTP_X_ROLES',),
                            known.roles if known else DEFAULT_ROLES)
        admin = ADMIN_ROLE in [role.strip() for role in roles.split(',')]
        if known:
            project, user = known.project, known.user
        else:
            project = ADMIN if admin else DEFAULT_PROJECT
            user = ADMIN if admin else None
        project = self._first(
            environ, ('HTTP_X_AUTH_PROJECT_ID', 'HTTP_X_PROJECT_ID'), project)
        environ['HTTP_X_AUTH_USER'] = self._first(
            environ, ('HTTP_X_AUTH_USER', 'HTTP_X_USER_ID'),
            user or '%s-user' % project)
        environ['HTTP_X_AUTH_PROJECT_ID'] = project
        environ['HTTP_X_ROLES'] = roles
        return self.application(environ, start_response)


class SandboxRoutes(object):
    """Nova's API, and the stand-ins under their own path prefixes.

    :param nova: nova-api's WSGI application (``/v2.1`` and the rest).
    :param glance: Nova's stub Glance, for :class:`.stand_ins.ImageStandIn`.
    """

    def __init__(self, nova, glance):
        self.prefixes = (
            (stand_ins.IDENTITY_PREFIX, stand_ins.IdentityStandIn()),
            (stand_ins.IMAGE_PREFIX, stand_ins.ImageStandIn(glance)))
        self.nova = nova

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        for prefix, application in self.prefixes:
            if path == prefix or path.startswith(prefix + '/'):
                environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME',
                                                     '') + prefix
                environ['PATH_INFO'] = path[len(prefix):]
                return application(environ, start_response)
        return self.nova(environ, start_response)


class SandboxServer(object):
    """Serve a WSGI application over HTTP on a loopback socket.

    :param listening: a socket from :func:`.loopback.listen`, possibly
        opened before eventlet patched the standard library.
    """

    def __init__(self, listening):
        if not isinstance(listening, eventlet.greenio.GreenSocket):
            listening = eventlet.greenio.GreenSocket(listening)
        self._socket = listening
        self.host, self.port = listening.getsockname()[:2]
        self._thread = None

    def serve(self, application, glance):
        """Serve nova-api's WSGI application in a green thread.

        :param glance: Nova's stub Glance, whose images the image stand-in
            shows.
        """
        # One request per connection: stopping never waits for an idle
        # keep-alive client.
        self._thread = eventlet.spawn(
            eventlet.wsgi.server, self._socket,
            SandboxIdentity(SandboxRoutes(application, glance)),
            log_output=False, keepalive=False, debug=False)

    @property
    def endpoint(self):
        """The compute endpoint, e.g. ``http://127.0.0.1:8774/v2.1``."""
        host = '[%s]' % self.host if ':' in self.host else self.host
        return 'http://%s:%d/v2.1' % (host, self.port)

    @property
    def auth_url(self):
        """The identity stand-in, e.g. ``http://127.0.0.1:8774/identity``."""
        return self.endpoint[:-len('/v2.1')] + stand_ins.IDENTITY_PREFIX

    def stop(self):
        if self._thread is not None:
            self._thread.kill()
            self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
