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

"""Opting a buried server in or out of waiting for room.

``PUT`` and ``DELETE /os-cell0-rebuild/servers/{server_id}/wait``, a
sub-resource of the rebuildability API, unversioned as it is. Nova refuses
metadata changes on an ERROR server (``update_instance_metadata`` takes
active, paused, suspended and stopped servers only), so a server already
buried cannot opt in through its metadata: it does here. The wait's row is
the truth from then on (:mod:`nova_cell0_rebuild.objects.cell0_wait`).
"""

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import webob

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.api import cell0_servers
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.notifications import wait as wait_notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.pending import deadline as deadline_grammar
from nova_cell0_rebuild.policies import cell0_waits as policies
from nova_cell0_rebuild.schemas import cell0_waits as schemas

LOG = logging.getLogger(__name__)


def _body(req):
    """The request's JSON body, valid against the schema.

    :raises: RequestRefused(415 a Content-Type Nova does not take; 400,
        with Nova's words for a body that is not JSON,
        ``nova.api.openstack.wsgi``).
    """
    if not nova_api.content_type_supported(req):
        raise exception.RequestRefused(415, _('Unsupported Content-Type'))
    try:
        body = jsonutils.loads(req.body)
    except ValueError:
        raise exception.RequestRefused(400, _('Malformed request body'))
    nova_api.validate_body(body, schemas.put_body)
    return body


def _refuse_closed(conf, project_id):
    """409 when this cloud or the server's project does not serve waits."""
    if not conf.cell0_rebuild_pending.enabled:
        raise exception.RequestRefused(409, _(
            'Waiting for room is not enabled in this cloud.'))
    if not wait_opt_in.project_enabled(conf, project_id):
        raise exception.RequestRefused(409, _(
            'Waiting for room is not enabled for project %s.') % project_id)


def _resolve(conf, raw, now, buried_at):
    """The deadline of a ``PUT``: a duration counts from now.

    :raises: RequestRefused(400 malformed or past, 409 when the server
        was buried longer ago than a wait may last).
    """
    most = conf.cell0_rebuild_pending.max_wait_seconds
    try:
        resolved = deadline_grammar.resolve(
            raw, start=now, buried_at=buried_at, max_wait_seconds=most)
    except deadline_grammar.MalformedDeadline as exc:
        raise exception.RequestRefused(400, str(exc))
    if resolved.deadline > now:
        return resolved
    if resolved.clamped:
        raise exception.RequestRefused(409, _(
            'The server was buried more than %d seconds ago '
            '([cell0_rebuild_pending] max_wait_seconds): it can no longer '
            'wait for room.') % most)
    raise exception.RequestRefused(400, _(
        'The deadline %s has passed.') % raw)


def database_refusal(server_id, error):
    """The answer to a database error that stopped a change of a wait.

    Concurrent changes of one wait are retried by the object; a
    DBDeadlock left (Galera: certification lost again) is 409, a
    DBConnectionError (a node failing over) 503: retry either.
    """
    if isinstance(error, db_exc.DBDeadlock):
        LOG.warning('A change of the wait of server %s conflicted with a '
                    'concurrent one: %s', server_id, error)
        return exception.RequestRefused(409, _(
            'The wait of server %s was changed by a concurrent request; '
            'retry.') % server_id)
    LOG.error('The database did not answer while the wait of server %s was '
              'changed: %s', server_id, error)
    return exception.RequestRefused(503, _(
        'The database did not answer while the wait of server %s was '
        'changed; retry later.') % server_id)


def _contended(server_id, write, *args, **kwargs):
    """Run a write of a wait; 409 when others' writes kept changing it."""
    try:
        return write(*args, **kwargs)
    except exception.WaitContended as exc:
        raise exception.RequestRefused(409, exc.format_message())


def _first_burial(context, entry):
    """When the server was first buried, as far as we know: its latest
    fault's date, or its wait's ``queued_at`` if earlier (each burial
    after a failed rebuild writes a new fault). A wait keeps its place in
    the order and its longest length from there.
    """
    buried_at = cell0_servers.buried_at(entry)
    wait = objects.Cell0Wait.get_by_instance_uuid(context.elevated(),
                                                  entry['uuid'])
    if wait is None:
        return buried_at
    return min(buried_at, wait.queued_at.replace(tzinfo=None))


class Cell0Waits(object):
    """Answers ``PUT`` and ``DELETE`` of a buried server's wait.

    :param servers: the rebuildability API's
        :class:`~nova_cell0_rebuild.api.cell0_servers.Cell0Servers`, which
        finds the server as its ``show`` does and gives its view.
    """

    def __init__(self, conf, servers):
        self.conf = conf
        self.servers = servers

    def put(self, req, context, server_id):
        """Start (or move the deadline of) a buried server's wait.

        A wait that ended starts again, its attempts kept; its place in
        the order is its burial's, whenever it opted in.

        :raises: RequestRefused (400 body or deadline, 403 policy, 404 as
            ``show``, 409 waits not served for the server's project).
        """
        # The body first, as Nova's schema decorator checks it.
        raw = _body(req)['wait']['deadline']
        entry = self.servers.found(context, server_id, policies.WAIT)
        _refuse_closed(self.conf, entry['project_id'])
        now = timeutils.utcnow()
        buried_at = _first_burial(context, entry)
        resolved = _resolve(self.conf, raw, now, buried_at)
        reason_code = last_reason = None
        if resolved.clamped:
            reason_code = fields.WaitReason.CLAMPED
            last_reason = _(
                'The deadline %(raw)s is later than %(most)d seconds after '
                'the burial ([cell0_rebuild_pending] max_wait_seconds): '
                'clamped to that.') % {
                    'raw': raw,
                    'most': self.conf.cell0_rebuild_pending.max_wait_seconds}
        wait = _contended(
            server_id, objects.Cell0Wait.open,
            context.elevated(), server_id, project_id=entry['project_id'],
            user_id=context.user_id, source=fields.WaitSource.API,
            queued_at=buried_at, deadline=resolved.deadline,
            reason_code=reason_code, last_reason=last_reason)
        LOG.info('Server %(uuid)s waits for room until %(deadline)s, asked '
                 'by user %(user)s.', {'uuid': server_id,
                                       'deadline': wait.deadline,
                                       'user': context.user_id})
        # Sent for each PUT: a wait began, or its deadline was asked anew.
        wait_notifications.notify_start(context, wait)
        return self.servers.answer(context, entry)

    def delete(self, req, context, server_id):
        """End a buried server's wait; its metadata no longer opts it in.

        Idempotent: a server that was not waiting answers 204 too.

        :raises: RequestRefused (403 policy, 404 as ``show``).
        """
        entry = self.servers.found(context, server_id, policies.CANCEL)
        before = objects.Cell0Wait.get_by_instance_uuid(context.elevated(),
                                                        server_id)
        ended = _contended(
            server_id, objects.Cell0Wait.cancel, context.elevated(),
            server_id, project_id=entry['project_id'],
            user_id=context.user_id,
            queued_at=cell0_servers.buried_at(entry),
            last_reason=_('Cancelled by user %s.') % context.user_id)
        LOG.info('The wait for room of server %(uuid)s was cancelled by '
                 'user %(user)s.', {'uuid': server_id,
                                    'user': context.user_id})
        if before is not None and before.state != fields.WaitState.ENDED:
            # Only a wait that was open ends (a DELETE that only keeps the
            # metadata from opting the server in ends nothing).
            wait_notifications.notify_end(context, ended,
                                          wait_notifications.CANCELLED)
        return webob.Response(status=204)
