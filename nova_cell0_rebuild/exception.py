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

"""Exceptions of nova-cell0-rebuild."""

from nova_cell0_rebuild._i18n import _


class Cell0RebuildException(Exception):
    """Base of the plugin's exceptions; formats ``msg_fmt`` with kwargs."""

    msg_fmt = _('An unknown error occurred.')

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        super().__init__(message)


class CreateRecordNotFound(Cell0RebuildException):
    msg_fmt = _('No create record for %(key)s.')


class CreateRecordExists(Cell0RebuildException):
    msg_fmt = _('A create record for request %(request_id)s already exists.')


class InvalidConfiguration(Cell0RebuildException):
    msg_fmt = _('Invalid [cell0_rebuild] configuration: %(reason)s')


class RequestRefused(Cell0RebuildException):
    """A request is refused; answered as a Nova-style fault.

    :param status: the HTTP status of the answer (400, 403, 404, 409).
    :param message: the fault's message, shown to the user.
    """

    def __init__(self, status, message):
        self.status = status
        super().__init__(message)


class GateRefused(RequestRefused):
    """An eligibility gate refused a rebuild from cell0."""

    def __init__(self, gate, status, message):
        self.gate = gate
        super().__init__(status, message)


class ServerChangedDuringMove(RequestRefused):
    """Nova accepted a write to the server while it was being moved.

    The move was undone with the write kept; the rebuild may be tried
    again from a fresh read of the server.
    """

    def __init__(self, message):
        super().__init__(409, message)


class GateLoadError(InvalidConfiguration):
    msg_fmt = _('Invalid [cell0_rebuild] enabled_gates: %(reason)s')


class MoveInProgress(Cell0RebuildException):
    msg_fmt = _('A move of instance %(uuid)s out of cell0 is in progress.')


class MoveInterrupted(Cell0RebuildException):
    """A move was left in progress by a process that stopped."""

    msg_fmt = _('The move of instance %(uuid)s out of cell0 was '
                'interrupted at step %(step)s.')

    def __init__(self, journal):
        self.journal = journal
        super().__init__(uuid=journal.instance_uuid, step=journal.step)


class JournalConflict(Cell0RebuildException):
    msg_fmt = _('The move journal of instance %(uuid)s changed under us.')


class LeaseHeld(Cell0RebuildException):
    """Heal found the lease of a move alive, or no longer the one it read."""

    msg_fmt = _('The move of instance %(uuid)s out of cell0 is alive: its '
                'lease is held.')


class WaitContended(Cell0RebuildException):
    """Writes of others changed a server's wait each time we read it."""
    msg_fmt = _('The wait of instance %(uuid)s kept changing under us; '
                'try again.')


class AllocationNotReleased(Cell0RebuildException):
    msg_fmt = _('Placement could not be reached to release the allocation '
                'of server %(uuid)s.')


class ServiceCredentialsMissing(Cell0RebuildException):
    msg_fmt = _('No credentials to authenticate as a service: set auth_type '
                'and the options of its auth plugin in [%(group)s] or in '
                'Nova\'s [%(fallback)s].')


class ServiceCredentialsInvalid(Cell0RebuildException):
    msg_fmt = _('Invalid credentials in [%(group)s]: %(reason)s')


class ServiceAuthenticationFailed(Cell0RebuildException):
    msg_fmt = _('Could not authenticate with the credentials of [%(group)s] '
                'at %(auth_url)s: %(reason)s')


class NoCandidatePossible(Cell0RebuildException):
    """The scheduler's request filters refuse a server before placement is
    asked (its NoValidHost): no query is sent for it.

    :ivar reason: the filter's message, for ``last_reason``.
    """

    msg_fmt = _('No candidate is possible: %(reason)s')

    def __init__(self, reason):
        self.reason = reason
        super().__init__(reason=reason)


class PlacementUnavailable(Cell0RebuildException):
    """Placement could not answer a query for allocation candidates.

    Neither "fits" nor "no candidate": the shape is asked again later.
    """

    msg_fmt = _('Placement could not answer GET /allocation_candidates: '
                '%(reason)s')
