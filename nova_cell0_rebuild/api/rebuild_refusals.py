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

"""What a rebuild from cell0 answers for a server it cannot move (now).

A rebuild reads the server in several steps, and other requests act on it
meanwhile (another rebuild, a delete, Nova accepting a write): the answers
for those cases are said once, here, for the API and the operator's
command alike.
"""

from oslo_db import exception as db_exc
from oslo_log import log as logging

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import move_journal

LOG = logging.getLogger(__name__)

_NOT_IN_CELL0 = _('Instance %s is not in cell0: it cannot be rebuilt from '
                  'cell0 (it may have been rebuilt from cell0 already).')
_IN_PROGRESS = _("Instance %s is in an invalid state for 'rebuild' from "
                 "cell0: another rebuild is in progress.")
_DB_CONFLICT = _("Instance %s was not rebuilt from cell0: a concurrent "
                 "request wrote it at the same time (the database refused "
                 "this one's write); retry the rebuild.")
_DB_UNAVAILABLE = _("The database did not answer while instance %s was "
                    "being rebuilt from cell0; retry the rebuild later.")
_DB_CONFLICT_ACTION = _("Action '%(action)s' on instance %(id)s was not "
                        "carried out: a concurrent request wrote the "
                        "instance at the same time; retry it.")
_DB_UNAVAILABLE_ACTION = _("The database did not answer while action "
                           "'%(action)s' on instance %(id)s was checked "
                           "against a rebuild from cell0; retry it later.")
_CHANGED = _("Instance %s was changed by other requests while it was being "
             "rebuilt from cell0, each time: nothing was rebuilt; retry "
             "the rebuild.")


def not_in_cell0(server_id):
    """409 on the reaper path: the server is in a real cell."""
    return exception.RequestRefused(409, _NOT_IN_CELL0 % server_id)


def in_progress(server_id):
    """409: another rebuild of the server holds it, or moved it."""
    return exception.RequestRefused(409, _IN_PROGRESS % server_id)


def database_refusal(server_id, error, action=None):
    """The answer to a database error that ended a rebuild, if it has one.

    DBDeadlock, left once its transaction was retried: on a Galera cluster
    with writers on several nodes, a concurrent request's write won
    certification and this one committed nothing; 409, as for a rebuild
    that lost on one node. DBConnectionError: the database went away (a
    Galera node failed over, or lost its quorum); whether the last write
    committed is unknown, and nothing after it was done; 503.

    :param action: the name of another server action the filter was
        checking against a move (reboot, lock...) when the error came:
        the answer names it instead of a rebuild.
    :returns: a RequestRefused, or None for any other error.
    """
    if isinstance(error, db_exc.DBDeadlock):
        LOG.warning('%s of server %s refused: its database write conflicted '
                    'with a concurrent one (%s)',
                    action or 'Rebuild from cell0', server_id, error)
        return exception.RequestRefused(409, (
            _DB_CONFLICT_ACTION % {'action': action, 'id': server_id}
            if action else _DB_CONFLICT % server_id))
    if isinstance(error, db_exc.DBConnectionError):
        LOG.error('%s of server %s stopped: the database did not answer '
                  '(%s)', action or 'Rebuild from cell0', server_id, error)
        return exception.RequestRefused(503, (
            _DB_UNAVAILABLE_ACTION % {'action': action, 'id': server_id}
            if action else _DB_UNAVAILABLE % server_id))
    return None


def changed(server_id):
    """Nova accepted writes to the server during each attempt to move it."""
    return exception.ServerChangedDuringMove(_CHANGED % server_id)


def require_in_cell0(mapping, server_id):
    """Refuse a server that is gone or not in cell0, as a reload finds it.

    :param mapping: the server's InstanceMapping as just read, or None.
    :raises: RequestRefused: 404 when the server does not exist or is
        being deleted, 409 when it is not in cell0.
    """
    if mapping is None or mapping.queued_for_delete:
        raise exception.RequestRefused(404, _(
            'Instance %s could not be found.') % server_id)
    if not nova_servers.is_cell0(mapping.cell_mapping):
        raise exception.RequestRefused(409, _(
            'Instance %s is not in cell0.') % server_id)


def refusal_after_race(context, server_id, refusal):
    """The answer to a refused rebuild, or in-progress if a move overtook it.

    A rebuild reads the server in several steps; a concurrent rebuild that
    claimed or moved the server in between makes what was read look like a
    reason to refuse (no fault, no instance, a task in progress). The
    answer for this request is then that another rebuild is in progress,
    which is checked afresh here: a move of the server is in progress, or
    the server left cell0.

    :param refusal: the RequestRefused this request would answer.
    :returns: that refusal, or a RequestRefused(409) saying another rebuild
        is in progress.
    """
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, server_id)
    if mapping is None or mapping.queued_for_delete:
        return refusal  # deleted meanwhile: the refusal says so
    if not context.is_admin and mapping.project_id != context.project_id:
        return refusal  # Nova's 404 for a server of another project
    if nova_servers.is_cell0(mapping.cell_mapping):
        journal = objects.MoveJournal.get_by_instance_uuid(admin, server_id)
        if journal is None or (
                journal.status != move_journal.Status.IN_PROGRESS):
            return refusal
    LOG.info('Rebuild of server %s from cell0 refused: another rebuild '
             'moved it meanwhile (instead of: %s)', server_id, refusal)
    return in_progress(server_id)
