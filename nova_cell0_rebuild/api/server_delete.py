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

"""What the filter does around Nova's ``DELETE /servers/{id}``.

Before Nova acts, one indexed look-up says where the server is and whether
a move stashed its cell0 history (:func:`server_history.whereabouts`). A
server in a real cell with no stash (every server the plugin never moved,
and every moved one whose history was written back) passes to Nova with
nothing more. Otherwise, once Nova answered 204:

* a server in cell0 or a BuildRequest (perhaps moving): its journal, its
  create record and what Nova's archive would never remove are forgotten;
* a server rebuilt into a real cell: its stashed history is written back
  there, so that ``nova-manage db archive_deleted_rows`` moves it to the
  shadow tables with the server.

A 204 is not proof of a delete: Nova answers an instance with termination
disabled 204 too, and changes nothing. Nothing is forgotten or written
unless the server's mapping is gone or queued for delete afterwards. Nor
when a move took the server out of cell0 between Nova's read of it there
and its delete: Nova then deleted nothing (or failed), and is asked again.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_deleted_servers
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)

#: The look-up failed: handled as a server that may be moving.
_UNKNOWN = object()


def handle(application, req, context, server_id):
    """Pass the DELETE to Nova, then forget or write back what is ours."""
    admin = context.elevated()
    before = _look_up(admin, server_id)
    if before is None:
        return req.get_response(application)  # no mapping: Nova's 404
    moving = before is _UNKNOWN or not before.in_real_cell
    if not moving and not before.stashed:
        return req.get_response(application)
    record = _record_of(admin, server_id) if moving else None
    if not moving:
        resp = req.get_response(application)
        if resp.status_int == 204:
            _write_back_history(admin, server_id)
        return resp
    resp, after = _delete_where_it_is(application, req, admin, server_id,
                                      before)
    if resp.status_int != 204:
        return resp
    if after not in (None, _UNKNOWN) and after.in_real_cell:
        # It landed, and Nova deleted it there: a rebuilt server.
        _write_back_history(admin, server_id)
        return resp
    _forget_moving(admin, server_id, record, after,
                   building=before is _UNKNOWN or before.build_request)
    if after not in (None, _UNKNOWN) and after.cell_uuid is not None:
        # Deleted in cell0 once a move was undone there: the history that
        # move stashed goes back into cell0, for archive to find with it.
        _write_back_history(admin, server_id)
    return resp


#: How often Nova is asked to delete a server that moved under its delete.
DELETE_ATTEMPTS = 3


def _delete_where_it_is(application, req, admin, server_id, before):
    """Nova's answer to the DELETE, and where the server is after it.

    Nova's API reads the server, then deletes what it read. A move out of
    cell0 that takes the server elsewhere in between (to its build request,
    or to a real cell) leaves Nova deleting where the server no longer is:
    it answers 204 and deletes nothing. While the server is alive after
    the answer, and not where it was, Nova is asked again: it then reads
    the server where it now is (a build request it deletes as during its
    own create; a built server it deletes as any). A server Nova left where
    it was (termination disabled) is not asked about again.

    Nova may fail instead: when it read the server in cell0 and the move
    then wrote its BuildRequest (the mapping names no cell, the cell0 row
    is still there), Nova's delete of that row looks its cell up in the
    mapping and raises AttributeError on None (nova/compute/api.py
    ``API._delete``, "Doing local delete in cell"): a 500. Nova's answer
    is not kept then either while the server is alive elsewhere: it is
    asked again, and deletes the server where it now is.

    :returns: (Nova's last answer, the server's Whereabouts after it: None
        once its mapping is gone, _UNKNOWN when it could not be read).
    """
    where = before
    for attempt in range(1, DELETE_ATTEMPTS + 1):
        resp = req.copy().get_response(application)
        if resp.status_int != 204 and resp.status_int < 500:
            return resp, _UNKNOWN
        after = _where(admin, server_id)
        if not _moved_alive(where, after) or attempt == DELETE_ATTEMPTS:
            return resp, after if resp.status_int == 204 else _UNKNOWN
        LOG.info('Server %s moved while Nova deleted it (to %s): its DELETE '
                 'is passed to Nova again', server_id,
                 after.cell_uuid or 'its build request')
        where = after


def _moved_alive(where, after):
    """Whether the server is alive after Nova's 204, elsewhere than it was.
    """
    if after in (None, _UNKNOWN) or after.queued_for_delete:
        return False
    if where is _UNKNOWN:
        return True
    return ((where.cell_uuid, where.build_request) !=
            (after.cell_uuid, after.build_request))


def _look_up(admin, server_id):
    try:
        return server_history.whereabouts(admin, server_id)
    except Exception:
        LOG.exception('Could not look up where server %s is; its delete is '
                      'handled as if it were moving', server_id)
        return _UNKNOWN


def _record_of(admin, server_id):
    try:
        return record_keeping.record_of_server(admin, server_id)
    except Exception:
        LOG.exception('Could not look up the create record of server %s',
                      server_id)
        return None


def _where(admin, server_id):
    """The server's Whereabouts after Nova's answer; _UNKNOWN if unread."""
    try:
        return nova_servers.where_is(admin, [server_id]).get(server_id)
    except Exception:
        LOG.exception('Could not check that server %s was deleted; nothing '
                      'of it is forgotten (heal and purge will)', server_id)
        return _UNKNOWN


def _deleted(server_id, after):
    """Whether Nova really deleted the server it answered 204 for.

    :param after: the server's Whereabouts read after Nova's answer.
    :returns: True when its mapping is gone or queued for delete, False
        when it is not (termination disabled), None when unknown.
    """
    if after is _UNKNOWN:
        return None
    if after is not None and not after.queued_for_delete:
        LOG.warning('Nova answered the DELETE of server %s with 204 but did '
                    'not delete it (termination disabled?): nothing of it '
                    'is forgotten', server_id)
        return False
    return True


def _forget_moving(admin, server_id, record, after, building=True):
    """Forget the journal and record of a server deleted in cell0 or moving.

    :param building: whether the server was a BuildRequest when the DELETE
        came (or that is unknown): a move's hand-off may be in flight.
    """
    if not _deleted(server_id, after):
        return
    may_be_cast = True
    try:
        may_be_cast = record_keeping.forget_deleted(admin, server_id, record,
                                                    building=building)
    except Exception:
        LOG.exception('Could not forget the create record and move journal '
                      'of server %s', server_id)
    forget_unbuilt(admin, server_id, may_be_cast)


def forget_unbuilt(admin, server_id, may_be_cast):
    """What archive never removes of a server Nova deleted unbuilt.

    A server deleted as a BuildRequest (a create, or a move out of cell0)
    has no instance row for ``archive_deleted_rows`` to find: its
    RequestSpec and its server group membership would stay for ever. The
    conductor reads neither from the database. If it may have been sent
    the server, the mapping and the allocation are its own; if not (a move
    that stopped before its cast), they go too. A moved server is then
    kept deleted in cell0 with the history its move stashed, as Nova's
    delete keeps a server's row, for archive to move to the shadow tables.
    """
    try:
        if nova_deleted_servers.forget_deleted_server(
                admin, server_id, may_be_cast=may_be_cast):
            server_history.keep_deleted(admin, server_id)
    except Exception:
        LOG.exception('Could not remove the RequestSpec and group '
                      'membership of deleted server %s, or keep its '
                      'history; nova-cell0-rebuild-manage purge will',
                      server_id)


def _write_back_history(admin, server_id):
    """Write the stashed history of a deleted rebuilt server into its cell.

    Its mapping, read to find the cell, is also the proof of the delete.
    """
    try:
        server_history.materialise(admin, server_id, deleted_only=True)
    except Exception:
        # Kept: purge writes it back before archive can need it.
        LOG.exception('Could not write back the history of deleted server '
                      '%s', server_id)
