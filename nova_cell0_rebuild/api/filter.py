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

"""The ``cell0_rebuild`` paste filter for nova-api's v2.1 pipelines.

It must sit after ``keystonecontext``, which puts the request context in the
environment. Requests it does not handle pass to Nova untouched.
"""

import re

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import webob.dec
import webob.exc

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import build_request_actions
from nova_cell0_rebuild.api import cell0_servers
from nova_cell0_rebuild.api import cell0_waits
from nova_cell0_rebuild.api import create_capture
from nova_cell0_rebuild.api import microversion_hint
from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.api import rebuild as rebuild_flow
from nova_cell0_rebuild.api import rebuild_refusals
from nova_cell0_rebuild.api import server_delete
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)

# Nova routes every resource with and without a leading project id.
_PROJECT = r'(?:/(?P<project_id>[0-9a-f-]+))?'
# POST /os-volumes_boot creates a server too, below microversion 2.103.
CREATE_PATH = re.compile(r'^%s/(?:servers|os-volumes_boot)$' % _PROJECT)
ACTION_PATH = re.compile(r'^%s/servers/(?P<server_id>[^/]+)/action$'
                         % _PROJECT)
SERVER_PATH = re.compile(r'^%s/servers/(?P<server_id>[^/]+)$' % _PROJECT)
CELL0_SERVERS_PATH = re.compile(
    r'^%s/os-cell0-rebuild/servers(?:/(?P<server_id>[^/]+))?/?$' % _PROJECT)
CELL0_WAIT_PATH = re.compile(
    r'^%s/os-cell0-rebuild/servers/(?P<server_id>[^/]+)/wait/?$' % _PROJECT)
ACTIONS_PATH = re.compile(
    r'^%s/servers/(?P<server_id>[^/]+)/os-instance-actions(?:/[^/]+)?$'
    % _PROJECT)


class Cell0RebuildFilter(object):
    """Records server creates and rebuilds servers buried in cell0.

    :param rebuild: the RebuildFromCell0 handler.
    """

    def __init__(self, application, conf, rebuild):
        self.application = application
        self.conf = conf
        self.rebuild = rebuild
        self.cell0_servers = cell0_servers.Cell0Servers(conf, rebuild.gates)
        self.cell0_waits = cell0_waits.Cell0Waits(conf, self.cell0_servers)
        self.hint = microversion_hint.MicroversionHint(
            conf, rebuild.gates, rebuild.min_version)

    @staticmethod
    def _is_legacy_v2(req):
        # The urlmap mounts the legacy pipeline at /v2 and v2.1 at /v2.1.
        return req.script_name.rstrip('/').endswith('/v2')

    def _create(self, req):
        context = req.environ.get('nova.context')
        request_id = req.environ.get('openstack.request_id')
        version = nova_api.requested_version(
            req, legacy_v2=self._is_legacy_v2(req))
        if context is not None and request_id is None:
            # Nothing to key the record by (compute_req_id missing from
            # the pipeline): a rebuild of the server is refused later for
            # want of a record, so say why now.
            LOG.warning('Server create %s passes to Nova unrecorded: no '
                        'openstack.request_id in the request environment; '
                        'cell0_rebuild must come after compute_req_id in '
                        'api-paste.ini', context.request_id)
        if context is None or request_id is None or version is None:
            # No context: the filter is misplaced, Nova answers 401 itself.
            # No version: Nova rejects the header itself.
            return req.get_response(self.application)
        try:
            return create_capture.capture(
                req, self.application, context, request_id, version,
                conf=self.conf)
        except create_capture.RecordNotWritten:
            LOG.exception('Refusing server create %s: its create record '
                          'could not be written', request_id)
            return nova_api.fault(req, webob.exc.HTTPServiceUnavailable(
                explanation=_('Server creation is unavailable: the '
                              'cell0_rebuild create record could not be '
                              'written. Please retry later.')), version)

    @staticmethod
    def _left_to_nova(req, project_id):
        """Requests Nova refuses before it looks at the action."""
        context = req.environ.get('nova.context')
        if project_id and context is not None and (
                project_id != context.project_id):
            return True  # Nova: 400 "Malformed request URL"
        return not nova_api.content_type_supported(req)  # Nova: 415

    def _action(self, req, server_id, project_id=None):
        if self._left_to_nova(req, project_id):
            return req.get_response(self.application)
        action = rebuild_flow.action_body(req)
        body = rebuild_flow.rebuild_body(action)
        version = nova_api.requested_version(
            req, legacy_v2=self._is_legacy_v2(req))
        try:
            return self._action_of_ours(req, server_id, action, body,
                                        version)
        except (db_exc.DBConnectionError, db_exc.DBDeadlock) as error:
            # The filter's own read of the server's mapping before the
            # rebuild proper: a Galera writer failing over would otherwise
            # reach Nova's faultwrap as a 500.
            refusal = rebuild_refusals.database_refusal(server_id, error)
            return nova_api.fault(req, webob.exc.status_map[refusal.status](
                explanation=str(refusal)), version)

    def _action_of_ours(self, req, server_id, action, body, version):
        """The action, refused, handled by the plugin, or Nova's."""
        try:
            if body is None:
                build_request_actions.refuse_while_moving(
                    req.environ.get('nova.context'), server_id,
                    _action_name(action))
                return req.get_response(self.application)
            mapping = self.rebuild.wants(req, body, version, server_id)
            if mapping is None:
                # Nova's answer; its 409 below the threshold says so.
                return self.hint.amend(req, version, server_id,
                                       req.get_response(self.application))
            return self.rebuild.handle(req, body, version, mapping,
                                       server_id)
        except exception.RequestRefused as refusal:
            error = webob.exc.status_map[refusal.status](
                explanation=str(refusal))
            return nova_api.fault(req, error, version)

    def _update(self, req, server_id, project_id=None):
        """PUT /servers/{id}: refused while a move of ours holds the server
        unbuilt (its rename would be lost), else Nova's.
        """
        if self._left_to_nova(req, project_id):
            return req.get_response(self.application)
        try:
            build_request_actions.refuse_while_moving(
                req.environ.get('nova.context'), server_id,
                build_request_actions.UPDATE)
        except exception.RequestRefused as refusal:
            version = nova_api.requested_version(
                req, legacy_v2=self._is_legacy_v2(req))
            error = webob.exc.status_map[refusal.status](
                explanation=str(refusal))
            return nova_api.fault(req, error, version)
        return req.get_response(self.application)

    def _delete(self, req, server_id):
        context = req.environ.get('nova.context')
        if context is None:
            return req.get_response(self.application)
        return server_delete.handle(self.application, req, context,
                                    server_id)

    def _cell0_servers(self, req, server_id, project_id):
        """The rebuildability API: unversioned, answered here entirely."""
        if server_id is None:
            return self._ours(req, project_id, self.cell0_servers.index)
        return self._ours(req, project_id, self.cell0_servers.show,
                          server_id)

    def _cell0_wait(self, req, server_id, project_id):
        """``.../servers/{server_id}/wait``: PUT and DELETE; 405 else."""
        handler = {'PUT': self.cell0_waits.put,
                   'DELETE': self.cell0_waits.delete}.get(req.method)
        if handler is not None:
            try:
                return self._ours(req, project_id, handler, server_id)
            except (db_exc.DBConnectionError, db_exc.DBDeadlock) as error:
                refusal = cell0_waits.database_refusal(server_id, error)
                return nova_api.fault(req, webob.exc.status_map[
                    refusal.status](explanation=str(refusal)))
        error = webob.exc.HTTPMethodNotAllowed(
            explanation=_('The method %s is not allowed here: PUT starts '
                          'a wait, DELETE ends it.') % req.method,
            headers=[('Allow', 'PUT, DELETE')])
        return nova_api.fault(req, error)

    def _ours(self, req, project_id, handler, *args):
        """Answer a request of our resource with *handler*, its refusals
        as Nova-style faults.
        """
        context = req.environ.get('nova.context')
        if context is None:
            return req.get_response(self.application)  # Nova's 401/404
        try:
            if project_id and project_id != context.project_id:
                raise exception.RequestRefused(400, _(
                    "Malformed request URL: URL's project_id '%(url)s' "
                    "doesn't match Context's project_id '%(context)s'") % {
                        'url': project_id, 'context': context.project_id})
            return handler(req, context, *args)
        except exception.RequestRefused as refusal:
            error = webob.exc.status_map[refusal.status](
                explanation=str(refusal))
            return nova_api.fault(req, error)

    @staticmethod
    def _history(req, server_id):
        """Write back a moved server's history before Nova reads it."""
        context = req.environ.get('nova.context')
        if context is None:
            return
        try:
            server_history.materialise(context.elevated(), server_id,
                                       reader=context)
        except Exception:
            # The listing still answers, without what was not written.
            LOG.exception('Could not write back the history of server %s',
                          server_id)

    def _undecodable_path(self, req):
        """Answer a request whose path is not UTF-8 (webob cannot decode it).

        No server id is anything but UTF-8 and nothing of ours is under
        such a path, except a server id of the rebuildability API, which
        is then not found. Everything else is Nova's: its router reads the
        raw path and answers it as any unknown server or resource.
        """
        path = req.environ.get('PATH_INFO', '').encode(
            'latin-1', 'replace').decode('utf-8', 'replace')
        ours = CELL0_SERVERS_PATH.match(path)
        if req.method == 'GET' and ours and ours.group('server_id'):
            return self._cell0_servers(req, ours.group('server_id'),
                                       ours.group('project_id'))
        return self.application

    @webob.dec.wsgify
    def __call__(self, req):
        try:
            path = req.path_info
        except UnicodeError:
            return self._undecodable_path(req)
        if req.method == 'GET':
            ours = CELL0_SERVERS_PATH.match(path)
            if ours:
                return self._cell0_servers(req, ours.group('server_id'),
                                           ours.group('project_id'))
            actions = ACTIONS_PATH.match(path)
            if actions:
                self._history(req, actions.group('server_id'))
        wait = CELL0_WAIT_PATH.match(path)
        if wait:
            return self._cell0_wait(req, wait.group('server_id'),
                                    wait.group('project_id'))
        if req.method == 'DELETE':
            server = SERVER_PATH.match(path)
            if server:
                return self._delete(req, server.group('server_id'))
        if req.method == 'PUT':
            server = SERVER_PATH.match(path)
            if server:
                return self._update(req, server.group('server_id'),
                                    server.group('project_id'))
        if req.method == 'POST':
            if CREATE_PATH.match(path):
                return self._create(req)
            action = ACTION_PATH.match(path)
            if action:
                return self._action(req, action.group('server_id'),
                                    action.group('project_id'))
        return self.application


def _action_name(action):
    """The name of a server action's body ({"reboot": ...}), or None."""
    if isinstance(action, dict) and action:
        return next(iter(action))
    return None


def filter_factory(global_conf, **local_conf):
    """Paste filter factory: ``use = egg:nova-cell0-rebuild#cell0_rebuild``.
    """
    conf = cfg.CONF
    plugin_conf.register_opts(conf)
    nova_servers.register_nova_objects()
    objects.register_all()
    # A wrong setting stops nova-api here, with the reason, rather than
    # misbehaving on the first request.
    min_version = microversion_settings.check_min_microversion(
        conf.cell0_rebuild.min_microversion)
    reaper_min_version = microversion_settings.check_reaper_min_microversion(
        conf.cell0_rebuild.reaper_min_microversion, min_version)
    rebuild = rebuild_flow.RebuildFromCell0(
        conf, gates.load_gates(conf), min_version, reaper_min_version)

    def _filter(application):
        return Cell0RebuildFilter(application, conf, rebuild)
    return _filter
