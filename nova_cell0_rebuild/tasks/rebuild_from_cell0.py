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

"""The move: a server buried in cell0 goes back through Nova's create.

Every step is journaled (objects.MoveJournal), in this order:

1. ``claimed``: the journal's lease and the cell0 instance's task state
   are claimed by compare-and-swap; a second concurrent rebuild loses;
2. ``build_request_written``: a BuildRequest built from the cell0 instance
   with the rebuild's changes is written, the mapping points at no cell
   and the RequestSpec is reset to a one-server create, in one
   API-database transaction (with the journal step, when the plugin's
   tables live there);
3. ``cell0_rows_removed``: the cell0 rows are hard-deleted, only while
   the claim still holds;
4. ``casting``: the server is checked to be still wanted;
5. ``cast_sent``: Nova's own ``schedule_and_build_instances`` was cast; the
   move is done and the conductor owns the server.

At every point the server exists once: as its cell0 row (mapped to cell0,
steps 1 and 2 before the transaction), as its BuildRequest (mapped to no
cell; a cell0 row left by a crash in step 2 is invisible and removed by
heal), or, later, as the conductor's instance in a cell.

The move holds its journal as a lease. Each step first proves it still
holds it (the fencing token); a move that lost it to heal stops where it
is and leaves the server to heal, which undoes from what it finds. Heal
fences the cell0 side before it acts: it releases the cell0 claim, so the
hard delete of a move that lost its lease finds nothing to delete.

Once the cast may have been sent the move only goes forward: an error
after that point is logged and recorded in the journal, never undone,
since the conductor may be building the server.
"""

import os
import socket

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_build_requests as build_requests
from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_deleted_servers as deleted_servers
from nova_cell0_rebuild.adapters import nova_request_specs as request_specs
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import base
from nova_cell0_rebuild.tasks import move_states
from nova_cell0_rebuild.tasks import server_history
from nova_cell0_rebuild.tasks import undo

LOG = logging.getLogger(__name__)

#: The task state that claims a cell0 instance while it is moved.
CLAIM = undo.CLAIM
Outcome = move_states.Outcome

Step = fields.MoveStep
Status = fields.MoveStatus


class ServerGone(Exception):
    """The server was deleted while it was being moved."""


class LeaseLost(exception.Cell0RebuildException):
    """Another actor took the move over; this one must not act any more."""

    msg_fmt = 'The move of instance %(uuid)s was taken over.'


class ChangedUnderneath(exception.Cell0RebuildException):
    """Nova accepted a write to the server after the move copied it.

    The move is undone (the write stays on the cell0 row) and may be
    tried again from a fresh read of the server.
    """

    msg_fmt = ('Instance %(uuid)s changed while it was being rebuilt from '
               'cell0.')


def _raise_unless_applied(outcome, uuid):
    """Turn a fenced transition's outcome into the task's control flow."""
    if outcome is Outcome.APPLIED:
        return
    if outcome is Outcome.SERVER_GONE:
        raise ServerGone()
    if outcome is Outcome.LEASE_LOST:
        raise LeaseLost(uuid=uuid)
    raise ChangedUnderneath(uuid=uuid)


def lease_owner(request_id=None):
    """Who holds a move's lease, as operators read it in the journal."""
    return '%s:%d:%s' % (socket.gethostname(), os.getpid(),
                         request_id or '-')


class RebuildFromCell0Task(base.TaskBase):
    """Move one cell0 server back into Nova's create pipeline.

    :param context: the caller's context; compute acts with it (image,
        network and volume calls), as for a create.
    :param server: the gates' Cell0Server.
    :param prepared: the validated rebuild (nova_compute.PreparedRebuild).
    :param networks: NetworkRequestList from the create record, or None.
    :param bdms: the server's BlockDeviceMappingList from cell0.
    :param request_spec: the server's RequestSpec as stored.
    :param lease_seconds: ``[cell0_rebuild] move_lease_seconds``.
    :param journal: the server's MoveJournal (or None) as just read, so
        that it is not read again; by default it is read.
    """

    def __init__(self, context, server, prepared, networks, bdms,
                 request_spec, lease_seconds, journal=move_journal.UNREAD):
        super().__init__(context, server.instance)
        self.admin = context.elevated()
        self.server = server
        self.prepared = prepared
        self.networks = networks
        self.bdms = bdms
        self.request_spec = request_spec
        self.previous_journal = journal
        self.lease_seconds = lease_seconds
        self.journal = None
        self.build_request = None
        self.image = None
        self.resources = None
        self.history = None
        #: Set just before the cast: from then on nothing is undone.
        self.cast_attempted = False

    @property
    def _new_image_id(self):
        if self.prepared.image_changed:
            return self.prepared.image_id
        return None

    def _claim(self):
        fault = self.server.fault
        self.journal = objects.MoveJournal.start(
            self.admin, self.instance.uuid, self.lease_seconds,
            owner=lease_owner(self.context.request_id),
            request_id=self.context.request_id,
            fault_message=fault.message if fault else None,
            current=self.previous_journal)
        cell0_rows.claim(self.admin, self.server.cell0, self.instance, CLAIM)
        self.history = server_history.prepare(
            self.admin, self.server.cell0, self.instance)

    def _move(self):
        self.image = request_specs.image_for_build(
            self.context, self.bdms, self.prepared)
        self.resources = request_specs.resource_requests(
            self.context, self.instance, self.image, self.networks)
        self.build_request = build_requests.new_build_request(
            self.context, self.instance, self.bdms, dict(
                self.prepared.updates,
                pci_requests=self.resources.pci_requests),
            new_image_id=self._new_image_id)
        request_specs.reset_request_spec(self.request_spec, self.image,
                                         self.resources)
        in_transaction = db_api.uses_nova_api_database()
        if not in_transaction:
            # Glance and Cinder may have taken long: still ours? (In the
            # Nova API database the fenced journal write below shares the
            # transaction of the writes, which says so atomically.)
            self._heartbeat()
        try:
            build_requests.move_to_build_request(
                self.admin, self.build_request, self.server.cell0,
                request_spec=self.request_spec,
                also=server_history.stash_in_move(
                    self.admin, self.build_request, self.context.request_id,
                    self.history,
                    also=self._advance_to_written if in_transaction
                    else None))
        except build_requests.RequestSpecChanged:
            # Nova unpinned (or pinned) its availability zone meanwhile:
            # nothing was written; undone and tried again from a new read.
            raise ChangedUnderneath(uuid=self.instance.uuid)
        if not in_transaction:
            try:
                self._advance_to_written()
            except LeaseLost:
                # Written outside the journal's transaction by a move that
                # no longer holds it: only this move knows, so it takes
                # its own write back (compare-and-swap) before it stops.
                build_requests.move_back_to_cell0(
                    self.admin, self.instance.uuid, self.server.cell0)
                raise

    def _advance_to_written(self):
        self._fenced(self.journal.advance, Step.BUILD_REQUEST_WRITTEN)

    def _fenced(self, write, *args):
        """A journal write that proves the lease still holds.

        :raises: LeaseLost when it was taken over; ServerGone when the
            journal was forgotten because the server was deleted.
        """
        _raise_unless_applied(move_states.fenced(self.journal, write, *args),
                              self.instance.uuid)

    def _heartbeat(self):
        self._fenced(self.journal.heartbeat)

    def _remove_cell0_rows(self):
        # No heartbeat first: the fenced write of _move has just renewed
        # the lease, and the compare-and-swap below and the fenced write
        # after it catch a heal or a DELETE that came in between.
        if not cell0_rows.destroy_cell0_instance(
                self.admin, self.server.cell0, self.instance,
                task_state=CLAIM, copied=self.instance,
                history=self.history):
            # Not the row that was claimed and copied: heal released the
            # claim to fence this move off, or Nova accepted a write to
            # the server since it was read (a rename, a lock and its
            # reason, a reset of its state, a cleared password), which must
            # not be dropped with the rows.
            _raise_unless_applied(
                move_states.why_refused(self.admin, self.journal),
                self.instance.uuid)
        self._fenced(self.journal.advance, Step.CELL0_ROWS_REMOVED)

    def _cast(self):
        record = self.server.record
        request_spec = request_specs.complete_request_spec(
            self.request_spec, self.networks, self.resources,
            host=record.requested_host if record else None,
            node=record.requested_hypervisor_hostname if record else None)
        stored = build_requests.still_pending(self.admin, self.instance.uuid)
        if stored is None:
            # No BuildRequest any more: heal took the move over and buried
            # the server again (the lease says so), or Nova's delete
            # removed it; either way the conductor must not be asked.
            self._heartbeat()
            raise ServerGone()
        # A rename Nova's API wrote to the BuildRequest meanwhile.
        build_requests.take_stored_edits(self.build_request, stored)
        # The last fenced write: a move that lost its lease never casts.
        self._fenced(self.journal.advance, Step.CASTING)
        self.cast_attempted = True
        build_requests.schedule_and_build(
            self.context, self.build_request, request_spec, self.image,
            self.prepared.admin_password, self.networks,
            build_requests.clone_bdms(self.bdms, self._new_image_id))

    def _execute(self):
        self._claim()
        try:
            self._move()
            self._remove_cell0_rows()
            self._cast()
        except ServerGone:
            # What Nova keeps of a deleted server is kept (its row and
            # history, deleted, until archive), nothing else, its journal
            # neither; the conductor never got it (ServerGone comes before
            # the cast).
            LOG.info('Server %s was deleted while it moved out of cell0',
                     self.instance.uuid)
            self.journal.destroy()
            if deleted_servers.forget_deleted_server(
                    self.admin, self.instance.uuid, may_be_cast=False):
                server_history.keep_deleted(self.admin, self.instance.uuid)
            return None
        if not self._finish_after_cast():
            return None
        return self.build_request

    def _finish_after_cast(self):
        """Record the hand-off; the conductor owns the server whatever this
        write does, so a failure is logged, never undone.

        :returns: False when the server was deleted meanwhile (its journal
            went with it).
        """
        try:
            self.journal.finish(Status.DONE, step=Step.CAST_SENT)
        except Exception:
            if self._deleted_after_cast():
                return False
            LOG.exception('Server %s was handed to the conductor, but its '
                          'move journal could not record it; the move is '
                          'not undone', self.instance.uuid)
            return True
        LOG.info('Server %s rebuilt from cell0: handed to the conductor '
                 'for scheduling', self.instance.uuid)
        return True

    def _deleted_after_cast(self):
        """Whether a DELETE took the journal (or kept it, marked) once the
        cast was sent.

        Then what the conductor never removes goes (the RequestSpec and
        the group membership); the mapping and allocation are its own.
        """
        try:
            journal = objects.MoveJournal.get_by_instance_uuid(
                self.admin, self.instance.uuid)
            if journal is not None and not journal.deleted_after_hand_off():
                return False
            LOG.info('Server %s was deleted once handed to the conductor',
                     self.instance.uuid)
            deleted_servers.forget_deleted_server(
                self.admin, self.instance.uuid, may_be_cast=True)
        except Exception:
            LOG.exception('Could not tell whether server %s was deleted '
                          'once handed to the conductor', self.instance.uuid)
            return False
        return True

    def rollback(self, ex):
        if self.journal is None:
            return  # nothing claimed: another move runs, or never started
        if self.cast_attempted:
            self._record_forward_error(ex)
            return
        if isinstance(ex, LeaseLost):
            self._log_taken_over(ex)
            return
        try:
            outcome = undo.undo(self.admin, self.server.cell0, self.journal,
                                ex)
        except Exception:
            LOG.exception('Could not roll back the move of server %s out of '
                          'cell0; nova-cell0-rebuild-manage heal will',
                          self.instance.uuid)
            return
        if outcome is Outcome.LEASE_LOST:
            self._log_taken_over(ex)

    def _log_taken_over(self, ex):
        LOG.warning('The move of server %s out of cell0 was taken over '
                    '(%s); its new holder finishes or undoes it',
                    self.instance.uuid, ex)

    def _record_forward_error(self, ex):
        LOG.error('The cast of server %s to the conductor raised %r; the '
                  'conductor may have it, so the move is not undone: the '
                  'server stays in BUILD until the conductor places it or '
                  'the user deletes it', self.instance.uuid, ex)
        try:
            self.journal.record_error(
                'cast raised: %s' % (str(ex) or type(ex).__name__))
        except Exception:
            LOG.exception('Could not record the error of the move of '
                          'server %s', self.instance.uuid)
