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

"""The move out of cell0 as one state machine: its states, who drives it.

A move is recorded in the server's MoveJournal, whose lease (a fencing
token) names the one actor that may act on it. The states, in order:

==========================  ========================================  =====
state (journal step)        where the server is                       undo
==========================  ========================================  =====
claimed                     its cell0 row, claimed (task state)       yes
build_request_written       a BuildRequest, mapped to no cell; the    yes
                            cell0 row still there, invisible
cell0_rows_removed          its BuildRequest only                     yes
casting                     its BuildRequest; the cast may be sent    no
cast_sent (done)            the conductor's                           no
==========================  ========================================  =====

Transitions forward are taken by the rebuild (``RebuildFromCell0Task``).
Transitions back (``undo``: to the cell0 row, status ``rolled_back``) are
taken by whoever holds the lease: the rebuild's own rollback, or heal once
it took an expired lease over. Nova's DELETE ends a move in any state: the
filter forgets its journal, which fences the holder off.

Every write of a transition is fenced: a journal write that checks the
lease token (and the expected step) in the same API-database transaction
as the write it guards when the plugin's tables live there, or just before
it otherwise; a write to Nova's cell0 rows is a compare-and-swap on the
claim and on the content that was copied. Each returns an :class:`Outcome`
instead of raising one exception with several meanings.
"""

import enum

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects


class Outcome(enum.Enum):
    """What a fenced transition did."""

    #: The write was made: the actor still holds the move.
    APPLIED = 'applied'
    #: Another actor took the lease over: stop, and leave it the server.
    LEASE_LOST = 'lease lost'
    #: The server was deleted (its journal forgotten, or its mapping gone
    #: or queued for delete): nothing of it may be written again.
    SERVER_GONE = 'server gone'
    #: The rows are not what the actor expected (a write Nova accepted
    #: meanwhile, or the conductor took the server): nothing was written.
    CHANGED_UNDERNEATH = 'changed underneath'


def fenced(journal, write, *args, **kwargs):
    """Make a journal write that proves the lease still holds.

    :param write: a bound write of *journal* (advance, heartbeat, finish).
    :returns: Outcome.APPLIED, LEASE_LOST or SERVER_GONE.
    """
    try:
        write(*args, **kwargs)
    except exception.JournalConflict:
        return why_refused(journal._context, journal)
    return Outcome.APPLIED


def why_refused(admin, journal):
    """Why a fenced write or a compare-and-swap on Nova's rows was refused.

    Read afresh: a journal that is gone (or kept by the DELETE of a
    server during its hand-off) or whose server's mapping is gone (or
    queued for delete) means the server was deleted; a new fencing
    token means the lease was taken over; otherwise the rows changed.
    """
    uuid = journal.instance_uuid
    current = objects.MoveJournal.get_by_instance_uuid(admin, uuid)
    if current is None or current.deleted_after_hand_off():
        return Outcome.SERVER_GONE
    if current.lease_token != journal.lease_token:
        return Outcome.LEASE_LOST
    mapping = nova_servers.get_mapping(admin, uuid)
    if mapping is None or mapping.queued_for_delete:
        return Outcome.SERVER_GONE
    return Outcome.CHANGED_UNDERNEATH
