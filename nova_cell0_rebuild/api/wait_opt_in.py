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

"""The opt-in of a create: does its ``cell0_rebuild:wait`` key count?

A create may carry the metadata key ``cell0_rebuild:wait`` with a deadline
(:mod:`nova_cell0_rebuild.pending.deadline`). The create capture asks
:func:`at_create` before Nova handles the request, because only then does
the filter hold the creator's token: the policy is evaluated for the person
who asked, not later for the service that rebuilds. The outcome goes into
the create record (``wait_deadline``, ``wait_refusal``).

It never changes Nova's answer: whatever is wrong (waits disabled, project
not enabled, malformed value, policy refusal, a failure of the check
itself) is returned as a refusal, logged, and the create goes on exactly
as without the key. So :func:`at_create` never raises.
"""

import collections

from oslo_log import log as logging

from nova_cell0_rebuild import exception
from nova_cell0_rebuild.pending import deadline
from nova_cell0_rebuild.policies import cell0_waits

LOG = logging.getLogger(__name__)

#: The metadata key of the opt-in at create.
METADATA_KEY = 'cell0_rebuild:wait'

#: Longest raw value and refusal returned: what the create record's
#: columns hold. Nova refuses metadata values over 255 characters itself.
RAW_LIMIT = 255
REFUSAL_LIMIT = 255

#: Reason codes of a refusal, as the ``wait`` view's ``reason_code``.
DISABLED = 'disabled'
PROJECT_NOT_ENABLED = 'project_not_enabled'
MALFORMED = 'malformed'
POLICY = 'policy'
#: The check itself failed (a bug or an outage of the policy's backend).
ERROR = 'error'

_CODES = (DISABLED, PROJECT_NOT_ENABLED, MALFORMED, POLICY, ERROR)


class OptIn(collections.namedtuple('OptIn', ['raw', 'refusal'])):
    """A create's opt-in: the raw deadline and why it is not honoured.

    ``raw`` is the key's value (a string of at most RAW_LIMIT characters)
    or None: no key, or a value that is not a string. ``refusal`` is None
    when the opt-in is honoured, else ``"<code>: <message>"``.
    """

    __slots__ = ()

    @property
    def honoured(self):
        return self.raw is not None and self.refusal is None

    @property
    def code(self):
        """The refusal's reason code, or None."""
        return refusal_code(self.refusal)


NONE = OptIn(None, None)


def refusal_code(refusal):
    """The reason code of a stored refusal (``"<code>: ..."``), or None."""
    if not refusal:
        return None
    code = refusal.split(':', 1)[0]
    return code if code in _CODES else ERROR


def refusal_reason(refusal):
    """The words of a stored refusal, after its code."""
    return refusal.split(': ', 1)[-1]


def project_enabled(conf, project_id):
    """Whether ``[cell0_rebuild_pending] projects`` lets *project_id* wait.

    Only the list: whether waits are enabled at all (``enabled``) is the
    caller's other check, as the API and the service answer the two with
    different reason codes. A request without a project never waits.
    """
    if not project_id:
        return False
    projects = conf.cell0_rebuild_pending.projects
    return '*' in projects or project_id in projects


def at_create(context, conf, server_body, authorize):
    """The opt-in of a create's ``server`` object; never raises.

    :param server_body: the ``server`` object of the create's body, as
        the client sent it (anything: Nova validates it later).
    :param authorize: ``authorize(context, rule, target)``, raising
        ``RequestRefused`` when the caller does not hold *rule*
        (:func:`nova_cell0_rebuild.adapters.nova_api.authorize`).
    :returns: OptIn; ``OptIn(None, None)`` when the create has no key.
    """
    raw = None
    try:
        metadata = (server_body.get('metadata')
                    if isinstance(server_body, dict) else None)
        if not isinstance(metadata, dict) or METADATA_KEY not in metadata:
            return NONE
        value = metadata[METADATA_KEY]
        raw = _storable(value)
        refusal = _refusal(context, conf, value, authorize)
        if refusal is not None:
            LOG.info('The wait opt-in of a create (project %s) is not '
                     'honoured: %s', context.project_id, refusal)
        return OptIn(raw, refusal)
    except Exception as exc:
        LOG.exception('The wait opt-in of a create could not be checked; '
                      'the create goes on without it.')
        return OptIn(raw, _refused(ERROR, _error_message(exc)))


def _refusal(context, conf, value, authorize):
    """Why the opt-in is not honoured, or None; in the spec's order."""
    if not conf.cell0_rebuild_pending.enabled:
        return _refused(DISABLED, 'waiting for room is not enabled on this '
                                  'cloud')
    if not project_enabled(conf, context.project_id):
        return _refused(PROJECT_NOT_ENABLED,
                        'waiting for room is not enabled for project %s'
                        % context.project_id)
    try:
        deadline.validate(value)
    except deadline.MalformedDeadline as exc:
        return _refused(MALFORMED, str(exc))
    target = {'project_id': context.project_id,
              'user_id': context.user_id}
    try:
        authorize(context, cell0_waits.WAIT, target)
    except exception.RequestRefused as exc:
        return _refused(POLICY, str(exc))
    return None


def _error_message(exc):
    # The class only: an exception's text may carry internals (URLs,
    # statements) that the API's last_reason must not show.
    return 'the opt-in could not be checked (%s)' % type(exc).__name__


def _storable(value):
    """The value as the create record keeps it: only one in the grammar
    (ASCII, at most 255 characters), else None.

    The record is written before Nova acts, and a value the database
    cannot store (a lone surrogate, a NUL on PostgreSQL) would fail it and
    the create with it; the refusal quotes such a value, escaped.
    """
    try:
        deadline.validate(value)
    except deadline.MalformedDeadline:
        return None
    return value[:RAW_LIMIT]


def _refused(code, message):
    # ASCII only, whatever the user's value held, for the same reason.
    text = ('%s: %s' % (code, message)).encode(
        'ascii', 'backslashreplace').decode('ascii')
    return text[:REFUSAL_LIMIT]
