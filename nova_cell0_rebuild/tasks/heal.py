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


"""Heal: finish or roll back moves out of cell0 that a crash interrupted.

A journal left ``in_progress`` whose lease expired (its holder stopped
renewing it: ``[cell0_rebuild] move_lease_seconds``) is taken over first,
with a new fencing token, so that a holder that was only slow stops at its
next step. Heal of a move whose lease is alive changes nothing. Then the
journal is compared with where the server really is, and the move is
finished or undone so that the server exists exactly once and its mapping
agrees:

==========================================  ================================
server found                                heal
==========================================  ================================
lease alive                                 nothing: the move is running
lease written by another actor as heal      nothing: left alone (the other
took it (Galera: DBDeadlock, once retried)  actor's write won)
deleted (no mapping, or queued for delete)  leftovers removed, journal gone
                                            (fenced: a heal that lost its
                                            lease meanwhile says so)
in a real cell                              done: the conductor built it
                                            (fenced, as above)
BuildRequest, cast perhaps sent             left alone and reported: the
                                            conductor may still build it
mapped to cell0, or a BuildRequest and a    cell0 claim released (fencing
cell0 row                                   the old holder off), mapped to
                                            cell0 again: rolled back
BuildRequest, no cell0 row, not yet cast    buried in cell0 again with its
                                            fault: rolled back
its lease taken over while heal undid it    left alone and reported: the
(another heal, heal slower than the lease)  new holder finishes the undo
handed off more than ``[cell0_rebuild]      its allocation released, buried
hand_off_timeout`` ago and still only a     in cell0 again with its fault:
BuildRequest, no instance row in any cell   the conductor dropped it
(the conductor's cast failed midway)        (:func:`heal_dropped_hand_off`)
the same, but a cell has an instance row    left alone and reported: the
                                            conductor got that far
deleted during its hand-off, more than      what placement holds for it
``hand_off_timeout`` after the cast, no     released, its mapping and
live instance row in any cell               RequestSpec removed, journal
                                            gone
                                            (:func:`heal_deleted_hand_off`)
==========================================  ================================

Heal reports what its undo really did (tasks/undo.py returns it), never
"rolled back" for an undo that another actor finished.

Running heal again changes nothing: a healed journal is no longer in
progress, and one left alone holds heal's own fresh lease.
"""

import datetime
import os
import socket

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_build_requests as build_requests
from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_deleted_servers as deleted_servers
from nova_cell0_rebuild.adapters import nova_dropped_hand_offs as dropped
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import move_states
from nova_cell0_rebuild.tasks import server_history
from nova_cell0_rebuild.tasks import undo

LOG = logging.getLogger(__name__)

Step = fields.MoveStep
Status = fields.MoveStatus

ALIVE = 'left alone: the move is alive'
CONTENDED = 'left alone: another actor wrote the move at the same time'
DELETED = 'deleted'
DONE = 'done'
ROLLED_BACK = 'rolled back'
LEFT_ALONE = 'left alone: the cast may have been sent'
TAKEN_OVER = 'left alone: another heal took the move over'
CHANGED = 'left alone: the server moved on meanwhile'
FAILED = 'failed, retried by the next heal: %s'
REBURIED = 'buried in cell0 again: the conductor dropped the hand-off'
CLAIM_RELEASED = ('released what placement held for it: the server was '
                  'deleted during its hand-off')
IN_A_CELL = ('left alone: the conductor dropped the hand-off after it wrote '
             'the instance in cell %s')

#: How ``last_error`` of a move heal reopened (MoveJournal.reopen) starts,
#: whatever the words after it: the conductor's scheduler may have claimed
#: an allocation for it. Kept as it is across releases: a heal of a newer
#: release finishes a move an older one reopened.
DROPPED_MARK = 'hand-off dropped:'
HAND_OFF_DROPPED = ('%s the conductor never placed the server; still a '
                    'BuildRequest in no cell [cell0_rebuild] '
                    'hand_off_timeout after it was cast' % DROPPED_MARK)


#: What heal reports for each outcome of its undo: what it really did.
UNDONE = {
    move_states.Outcome.APPLIED: ROLLED_BACK,
    move_states.Outcome.LEASE_LOST: TAKEN_OVER,
    move_states.Outcome.SERVER_GONE: DELETED,
    move_states.Outcome.CHANGED_UNDERNEATH: CHANGED,
}


#: What heal reports for each outcome of its fenced ``finish`` (done).
FINISHED = {**UNDONE, move_states.Outcome.APPLIED: DONE}


#: Outcomes of a fenced write after which the move is another actor's.
_NOT_OURS = (move_states.Outcome.LEASE_LOST,
             move_states.Outcome.CHANGED_UNDERNEATH)


def heal_owner():
    return 'heal:%s:%d' % (socket.gethostname(), os.getpid())


def heal_move(context, journal, lease_seconds):
    """Take over and heal one interrupted move; returns what was done.

    :param journal: the MoveJournal as read, its lease expired.
    :param lease_seconds: ``[cell0_rebuild] move_lease_seconds``.
    :returns: one of the outcome phrases of this module.
    """
    admin = context.elevated()
    uuid = journal.instance_uuid
    try:
        journal.take_over(heal_owner(), lease_seconds)
    except exception.LeaseHeld:
        LOG.info('The move of server %s out of cell0 is alive; heal leaves '
                 'it alone', uuid)
        return ALIVE
    except db_exc.DBDeadlock:
        # Still refused once retried: on a Galera cluster, another actor's
        # write to the journal (its holder, or another heal, through
        # another node) won each time. Nothing was taken: it is theirs.
        LOG.info('The move of server %s out of cell0 was written by '
                 'another actor at the same time; heal leaves it alone',
                 uuid)
        return CONTENDED
    cell0 = cell0_rows.get_cell0(admin)
    mapping = nova_servers.get_mapping(admin, uuid)
    if mapping is None or mapping.queued_for_delete:
        outcome = _forget_deleted(admin, journal)
    elif mapping.cell_mapping is not None and not nova_servers.is_cell0(
            mapping.cell_mapping):
        # Fenced: a heal that lost its lease says so, and one whose
        # journal the server's DELETE forgot says the server is gone.
        outcome = FINISHED[move_states.fenced(journal, journal.finish,
                                              Status.DONE)]
    elif journal.step == Step.CASTING and mapping.cell_mapping is None:
        # Burying it again would make the conductor, if it got the cast
        # late, delete the mapping of a server that then lives in cell0.
        outcome = LEFT_ALONE
    else:
        if (journal.last_error or '').startswith(DROPPED_MARK):
            # A reopened hand-off whose heal stopped before it buried it.
            dropped.release_allocation(admin, uuid)
        outcome = UNDONE[undo.undo(admin, cell0, journal,
                                   RuntimeError('interrupted, healed'))]
        if outcome == DELETED:
            outcome = _forget_deleted(admin, journal)
    LOG.info('Healed the move of server %s out of cell0 (step %s): %s',
             uuid, journal.step, outcome)
    return outcome


def _forget_deleted(admin, journal):
    """Remove what a server deleted during its move left behind.

    Only while heal holds the lease (proved first), and the journal goes
    last, fenced: a heal that lost the lease meanwhile (slower than it)
    reports that the move was taken over, not that it removed it. What
    it removed before is the deleted server's, the same whoever removes
    it.
    """
    proved = move_states.fenced(journal, journal.heartbeat)
    if proved in _NOT_OURS:
        return UNDONE[proved]
    uuid = journal.instance_uuid
    build_requests.drop_build_request(admin, uuid)
    may_be_cast = journal.may_be_cast()
    # After the cast, kept for heal_deleted_hand_off, as a DELETE does.
    forgotten = move_states.fenced(
        journal, journal.keep_after_delete if may_be_cast
        else journal.destroy_if_unchanged)
    if forgotten in _NOT_OURS:
        return UNDONE[forgotten]
    if deleted_servers.forget_deleted_server(admin, uuid, may_be_cast):
        # Its row (a live one a stopped move left in cell0, or one
        # written from the stash) is kept deleted with its history.
        server_history.keep_deleted(admin, uuid)
    else:
        server_history.materialise(admin, uuid)
    return DELETED


def heal_dropped_hand_off(context, journal, lease_seconds, cutoff):
    """Bury again a server whose hand-off the conductor dropped.

    The conductor's ``schedule_and_build_instances`` is a cast that
    nothing retries: when it fails before it maps the server (its
    database failing over under it, say), Nova leaves the server in BUILD
    as a BuildRequest for ever, as it leaves a create then. Once the cast
    is older than ``[cell0_rebuild] hand_off_timeout`` (far longer than
    the conductor spends on one, scheduling included) and no cell holds an
    instance row of the server, nothing will build it: heal takes the move
    back (a new fencing token), releases what the conductor's scheduler
    may have claimed in placement and buries the server in cell0 again
    from its BuildRequest, with its history and fault, rebuildable.

    :param journal: the move as read, handed off before *cutoff*.
    :returns: one of the outcome phrases of this module.
    """
    admin = context.elevated()
    uuid = journal.instance_uuid
    cells = dropped.cells_holding(admin, uuid)
    if cells:
        LOG.warning('Server %s is still a BuildRequest long after its '
                    'hand-off, but cell %s holds an instance row of it: '
                    'heal leaves it alone', uuid, ', '.join(cells))
        return IN_A_CELL % ', '.join(cells)
    try:
        journal.reopen(heal_owner(), lease_seconds, cutoff, HAND_OFF_DROPPED)
    except (exception.LeaseHeld, db_exc.DBDeadlock):
        # Another heal reopened it, a new move started, or its DELETE
        # forgot the journal: not this heal's.
        return CONTENDED
    LOG.warning('The conductor dropped the hand-off of server %s: it is '
                'still a BuildRequest in no cell; heal buries it in cell0 '
                'again', uuid)
    dropped.release_allocation(admin, uuid)
    outcome = UNDONE[undo.undo(admin, cell0_rows.get_cell0(admin), journal,
                               RuntimeError(HAND_OFF_DROPPED))]
    if outcome == DELETED:
        return _forget_deleted(admin, journal)
    return REBURIED if outcome == ROLLED_BACK else outcome


def heal_deleted_hand_off(context, journal, lease_seconds, cutoff):
    """Release what a conductor may hold in placement for a server deleted
    during its hand-off.

    The DELETE left the claim to the conductor, which releases it when it
    finds the BuildRequest gone; one that dropped the hand-off first
    never does, and nothing of the server is left for
    :func:`heal_dropped_hand_off` to find: its DELETE kept the journal
    for this (``MoveJournal.keep_after_delete``). ``hand_off_timeout``
    after the cast the conductor is done with it either way, and a
    deleted server holds nothing: its allocation is released, then its
    mapping and RequestSpec go if no cell has its instance row, and the
    journal last (fenced), so that a heal that stops midway is finished
    by the next one.

    :param journal: the marked hand-off as read, cast before *cutoff*.
    :returns: one of the outcome phrases of this module.
    """
    admin = context.elevated()
    uuid = journal.instance_uuid
    cells = dropped.cells_holding(admin, uuid, live_only=True)
    if cells:
        LOG.warning('Server %s was deleted during its hand-off, but cell %s '
                    'holds a live instance row of it: heal leaves it alone',
                    uuid, ', '.join(cells))
        return IN_A_CELL % ', '.join(cells)
    dropped.release_allocation(admin, uuid)
    deleted_servers.forget_deleted_server(admin, uuid, may_be_cast=False)
    try:
        journal.destroy_if_unchanged()
    except exception.JournalConflict:
        return CONTENDED
    LOG.info('Server %s was deleted during its hand-off: heal released what '
             'placement held for it', uuid)
    return CLAIM_RELEASED


def heal(context, lease_seconds, instance_uuid=None, hand_off_timeout=None):
    """Heal every move in progress whose lease expired, and every hand-off
    the conductor dropped.

    :param hand_off_timeout: ``[cell0_rebuild] hand_off_timeout``; None
        leaves dropped hand-offs alone.
    :returns: a list of (instance_uuid, step, outcome).
    """
    results = []
    moves = [(journal, heal_move, (lease_seconds,))
             for journal in objects.MoveJournal.list_expired(
                 context, lease_seconds, instance_uuid=instance_uuid)]
    if hand_off_timeout is not None:
        for find in (_dropped_hand_offs, _deleted_hand_offs):
            try:
                moves += find(context, lease_seconds, hand_off_timeout,
                              instance_uuid)
            except Exception as exc:
                # The interrupted moves are healed all the same.
                LOG.exception('Could not look for hand-offs the conductor '
                              'dropped')
                results.append((instance_uuid, None,
                                FAILED % (str(exc) or type(exc).__name__)))
    for journal, heal_one, args in moves:
        step = journal.step
        try:
            outcome = heal_one(context, journal, *args)
        except Exception as exc:
            # One server that cannot be healed now (its cell down, say)
            # must not stop the others; its lease expires again and the
            # next heal retries from what it then finds.
            LOG.exception('Could not heal the move of server %s out of '
                          'cell0', journal.instance_uuid)
            outcome = FAILED % (str(exc) or type(exc).__name__)
        results.append((journal.instance_uuid, step, outcome))
    return results


def _cutoff(hand_off_timeout):
    return timeutils.utcnow() - datetime.timedelta(seconds=hand_off_timeout)


def _dropped_hand_offs(context, lease_seconds, hand_off_timeout,
                       instance_uuid):
    """The moves whose cast was sent before now minus *hand_off_timeout*
    whose server is still an unmapped BuildRequest, to heal.

    Two statements, whatever the number of past moves: only the journals
    of servers still waiting as a BuildRequest are looked up.
    """
    admin = context.elevated()
    cutoff = _cutoff(hand_off_timeout)
    uuids = build_requests.unmapped_before(admin, cutoff)
    if instance_uuid is not None:
        uuids = [uuid for uuid in uuids if uuid == instance_uuid]
    return [(journal, heal_dropped_hand_off, (lease_seconds, cutoff))
            for journal in objects.MoveJournal.list_handed_off_before(
                admin, cutoff, uuids)]


def _deleted_hand_offs(context, lease_seconds, hand_off_timeout,
                       instance_uuid):
    """The hand-offs older than *hand_off_timeout* whose server was
    deleted during them, to heal; one statement.
    """
    cutoff = _cutoff(hand_off_timeout)
    journals = objects.MoveJournal.list_deleted_after_hand_off_before(
        context.elevated(), cutoff)
    return [(journal, heal_deleted_hand_off, (lease_seconds, cutoff))
            for journal in journals
            if instance_uuid in (None, journal.instance_uuid)]
