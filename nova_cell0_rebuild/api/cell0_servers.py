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

"""The rebuildability API: which buried servers a rebuild would accept.

``GET /os-cell0-rebuild/servers`` and ``GET
/os-cell0-rebuild/servers/{server_id}``, read-only and unversioned (no
microversion applies: the resource is the plugin's). Each server comes with
the verdict a rebuild from cell0 by the caller would get now, from the same
gates, so a reaper frees room only for servers that will be accepted.
"""

import datetime
from urllib import parse

from oslo_serialization import jsonutils
from oslo_utils import strutils
from oslo_utils import uuidutils
import webob

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild.api import wait_view
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.policies import cell0_servers as policies
from nova_cell0_rebuild.schemas import cell0_servers as schemas

#: The fields of a server in the answer, in the entries' names.
_FIELDS = ('name', 'project_id', 'user_id', 'rebuildable', 'refused_by',
           'reason', 'buried_at', 'rebuild_attempts', 'interrupted_move')
_NOT_FOUND = _('No server %s is buried in cell0.')


def buried_at(entry):
    """When an entry's server was buried, as naive UTC."""
    return datetime.datetime.strptime(entry['buried_at'],
                                      inventory.ISOTIME_FORMAT)


def _view(conf, entry, wait):
    """A server of the answer; *wait* its Cell0Wait or None."""
    server = {'id': entry['uuid']}
    server.update((key, entry[key]) for key in _FIELDS)
    server['wait'] = wait_view.wait_view(
        conf, entry['project_id'], wait,
        wait_opt_in.OptIn(entry['wait_deadline'], entry['wait_refusal']),
        buried_at(entry))
    return server


def _json(body):
    return webob.Response(
        body=jsonutils.dump_as_bytes(body), status=200,
        content_type='application/json', charset='UTF-8')


def _single(query, name, default=None):
    """The one value of a parameter of a query the schema validated."""
    return query.get(name, [default])[0]


def _limit(query):
    """The page size: ``limit`` capped at Nova's ``[api] max_limit``."""
    most = nova_api.max_limit()
    value = _single(query, 'limit')
    if value is None:
        return most
    try:
        return min(int(value), most)
    except ValueError:
        # ASCII digits, but more than int() reads (4300 of them).
        raise exception.RequestRefused(400, _(
            'Invalid input for query parameters limit: more digits than '
            'an integer takes.'))


def _all_projects(query):
    """``all_projects``; alone (``?all_projects``) it is true, as Nova's
    ``all_tenants``.
    """
    value = _single(query, 'all_projects')
    if value is None:
        return False
    return value == '' or strutils.bool_from_string(value, strict=True)


class Cell0Servers(object):
    """Answers the rebuildability API's GETs.

    :param gates: the loaded GateChain, the one rebuilds run.
    """

    def __init__(self, conf, gates):
        self.conf = conf
        self.gates = gates

    @property
    def lease_seconds(self):
        return self.conf.cell0_rebuild.move_lease_seconds

    def index(self, req, context):
        """One page of the buried servers the caller may see.

        :raises: RequestRefused (400 a query Nova's way of validating
            refuses against :data:`schemas.index_query`, 403 policy).
        """
        query = nova_api.validate_query(req, schemas.index_query)
        limit = _limit(query)
        all_projects = _all_projects(query)
        marker = _single(query, 'marker')
        project_id = _single(query, 'project_id')
        own = {'project_id': context.project_id,
               'user_id': context.user_id}
        nova_api.authorize(context, policies.LIST, own)
        if all_projects or (project_id is not None and
                            project_id != context.project_id):
            nova_api.authorize(context, policies.LIST_ALL_PROJECTS, own)
        elif project_id is None:
            project_id = context.project_id
        if limit == 0:
            entries, next_marker = [], None
        else:
            entries, next_marker = inventory.cell0_page(
                context, self.gates, project_id=project_id, marker=marker,
                limit=limit, lease_seconds=self.lease_seconds,
                judge_context=context)
        waits = self._waits(context, [entry['uuid'] for entry in entries])
        body = {'cell0_servers': [
            _view(self.conf, entry, waits.get(entry['uuid']))
            for entry in entries]}
        if next_marker is not None:
            body['cell0_servers_links'] = [{
                'rel': 'next', 'href': self._next_href(req, next_marker)}]
        return _json(body)

    @staticmethod
    def _next_href(req, marker):
        query = [(key, value) for key, value in req.GET.items()
                 if key != 'marker']
        query.append(('marker', marker))
        return '%s?%s' % (req.path_url, parse.urlencode(query))

    def show(self, req, context, server_id):
        """One buried server the caller may see.

        :raises: RequestRefused (400 bad query, 403 policy, 404 for a
            server that is not in cell0, unknown or of another project:
            the same answer, so that nothing leaks).
        """
        nova_api.validate_query(req, schemas.show_query)
        entry = self.found(context, server_id, policies.SHOW)
        return self.answer(context, entry)

    def found(self, context, server_id, rule):
        """The entry of a buried server the caller may see, checked
        against *rule*.

        :raises: RequestRefused (403 *rule*, 404 as :meth:`show`).
        """
        not_found = exception.RequestRefused(404, _NOT_FOUND % server_id)
        if not uuidutils.is_uuid_like(server_id):
            raise not_found
        mapping = nova_servers.get_mapping(context.elevated(), server_id)
        if (mapping is None or mapping.queued_for_delete or
                not nova_servers.visible_to(context, mapping)):
            raise not_found
        nova_api.authorize(context, rule,
                           {'project_id': mapping.project_id,
                            'user_id': mapping.user_id})
        found = inventory.cell0_server(
            context, self.gates, mapping, judge_context=context,
            lease_seconds=self.lease_seconds)
        if found is None:
            raise not_found
        return found[0]

    def answer(self, context, entry):
        """The 200 of one server: *entry* and its wait as they are now."""
        wait = self._waits(context, [entry['uuid']]).get(entry['uuid'])
        return _json({'cell0_server': _view(self.conf, entry, wait)})

    def _waits(self, context, uuids):
        """The waits of *uuids*: one query, whatever their number; none
        while waits are disabled (the view says so without them).
        """
        if not self.conf.cell0_rebuild_pending.enabled:
            return {}
        return objects.Cell0Wait.get_by_instance_uuids(context.elevated(),
                                                       uuids)
