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

"""The ``wait`` member of the rebuildability API: is a buried server waiting
for room, until when, and if not, why.

Pure: it reads what the caller passes (the options, the server's wait row
and what its create asked for) and writes nothing, so the list can build
it for a page from one query of the waits.
"""

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.pending import deadline as deadline_grammar

_WAITING_STATES = (fields.WaitState.WAITING, fields.WaitState.DISPATCHED)

#: Refusals of an opt-in at create that say how the cloud was then.
_AT_CREATE_ONLY = (wait_opt_in.DISABLED, wait_opt_in.PROJECT_NOT_ENABLED)


def _isotime(when):
    return None if when is None else inventory.isotime(when)


def _view(waiting, reason_code, last_reason, deadline=None, attempts=0,
          next_attempt=None):
    return {
        'waiting': waiting,
        'deadline': _isotime(deadline),
        'attempts': attempts,
        'next_attempt': _isotime(next_attempt),
        'reason_code': reason_code,
        'last_reason': last_reason,
    }


def _closed(conf, project_id):
    """The view of a server whose project may not wait, or None."""
    if not conf.cell0_rebuild_pending.enabled:
        return _view(False, fields.WaitReason.DISABLED,
                     _('Waiting for room is not enabled in this cloud.'))
    if not wait_opt_in.project_enabled(conf, project_id):
        return _view(False, fields.WaitReason.PROJECT_NOT_ENABLED,
                     _('Waiting for room is not enabled for project %s.')
                     % project_id)
    return None


def _of_row(wait):
    waiting = wait.state in _WAITING_STATES
    return _view(waiting, wait.reason_code, wait.last_reason,
                 deadline=wait.deadline, attempts=wait.attempts,
                 next_attempt=wait.next_attempt_at if waiting else None)


def _of_create(conf, opt_in, buried_at):
    """A server opted in at create that the service has not taken in yet:
    its deadline as the intake will compute it, from its burial.
    """
    if opt_in.refusal is not None:
        code = wait_opt_in.refusal_code(opt_in.refusal)
        reason = wait_opt_in.refusal_reason(opt_in.refusal)
        if code in _AT_CREATE_ONLY:
            # True then, perhaps not now (this view is served only when it
            # is not): the create's key no longer counts, the API does.
            reason = _('%(reason)s when the server was created; opt in with '
                       'PUT /os-cell0-rebuild/servers/{server_id}/wait.') % {
                           'reason': reason[:1].upper() + reason[1:]}
        return _view(False, code, reason)
    try:
        resolved = deadline_grammar.resolve(
            opt_in.raw, start=buried_at, buried_at=buried_at,
            max_wait_seconds=conf.cell0_rebuild_pending.max_wait_seconds)
    except deadline_grammar.MalformedDeadline as exc:
        # Checked at create; a value an older grammar took.
        return _view(False, fields.WaitReason.MALFORMED, str(exc))
    reason_code = fields.WaitReason.CLAMPED if resolved.clamped else None
    return _view(True, reason_code,
                 _('Opted in at create (metadata %s); the wait starts when '
                   'the pending service takes the server in.')
                 % wait_opt_in.METADATA_KEY,
                 deadline=resolved.deadline)


def wait_view(conf, project_id, wait, opt_in, buried_at):
    """The ``wait`` member of one buried server.

    :param wait: its Cell0Wait, or None. Once it exists it is the truth:
        the metadata key neither starts nor ends a wait after that.
    :param opt_in: what its create asked: a
        :class:`~nova_cell0_rebuild.api.wait_opt_in.OptIn`.
    :param buried_at: when it was buried (naive UTC).
    """
    closed = _closed(conf, project_id)
    if closed is not None:
        return closed
    if wait is not None:
        return _of_row(wait)
    if opt_in.raw is not None or opt_in.refusal is not None:
        return _of_create(conf, opt_in, buried_at)
    return _view(False, None, _(
        'Not opted in: create the server with metadata %s, or PUT '
        '/os-cell0-rebuild/servers/{server_id}/wait.')
        % wait_opt_in.METADATA_KEY)
