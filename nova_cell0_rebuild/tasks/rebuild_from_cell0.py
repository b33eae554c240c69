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

1. ``claimed``: the journal row and the cell0 instance's task state are
   claimed by compare-and-swap; a second concurrent rebuild loses;
2. ``build_request_written``: a BuildRequest built from the cell0 instance
   with the rebuild's changes is written, the mapping points at no cell
   and the RequestSpec is reset to a one-server create, in one
   API-database transaction (with the journal step, when the plugin's
   tables live there);
3. ``cell0_rows_removed``: the cell0 rows are hard-deleted;
4. ``casting``: the server is checked to be still wanted;
5. ``cast_sent``: Nova's own ``schedule_and_build_instances`` was cast; the
   move is done and the conductor owns the server.

At every point the server exists once: as its cell0 row (mapped to cell0,
steps 1 and 2 before the transaction), as its BuildRequest (mapped to no
cell; a cell0 row left by a crash in step 2 is invisible and removed by
heal), or, later, as the conductor's instance in a cell.
"""

from nova.compute import task_states
from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_create_pipeline as pipeline
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import base
from nova_cell0_rebuild.tasks import server_history

LOG = logging.getLogger(__name__)

#: The task state that claims a cell0 instance while it is moved.
CLAIM = task_states.REBUILDING

Step = fields.MoveStep
Status = fields.MoveStatus


class ServerGone(Exception):
    """The server was deleted while it was being moved."""


class RebuildFromCell0Task(base.TaskBase):
    """Move one cell0 server back into Nova's create pipeline.

    :param context: the caller's context; compute acts with it (image,
        network and volume calls), as for a create.
    :param server: the gates' Cell0Server.
    :param prepared: the validated rebuild (nova_compute.PreparedRebuild).
    :param networks: NetworkRequestList from the create record, or None.
    :param bdms: the server's BlockDeviceMappingList from cell0.
    :param request_spec: the server's RequestSpec as stored.
    :param journal: the server's MoveJournal (or None) as just read, so
        that it is not read again; by default it is read.
    :param stale_after: seconds after which a move left in progress is
        taken as interrupted.
    """

    def __init__(self, context, server, prepared, networks, bdms,
                 request_spec, journal=move_journal.UNREAD,
                 stale_after=60):
        super().__init__(context, server.instance)
        self.admin = context.elevated()
        self.server = server
        self.prepared = prepared
        self.networks = networks
        self.bdms = bdms
        self.request_spec = request_spec
        self.previous_journal = journal
        self.stale_after = stale_after
        self.journal = None
        self.build_request = None
        self.image = None
        self.history = None

    @property
    def _new_image_id(self):
        if self.prepared.image_changed:
            return self.prepared.image_id
        return None

    def _claim(self):
        fault = self.server.fault
        self.journal = objects.MoveJournal.start(
            self.admin, self.instance.uuid,
            request_id=self.context.request_id,
            fault_message=fault.message if fault else None,
            stale_after=self.stale_after, current=self.previous_journal)
        pipeline.claim(self.admin, self.server.cell0, self.instance, CLAIM)
        self.history = server_history.prepare(
            self.admin, self.server.cell0, self.instance)

    def _move(self):
        self.build_request = pipeline.new_build_request(
            self.context, self.instance, self.bdms, self.prepared.updates,
            new_image_id=self._new_image_id)
        self.image = pipeline.image_for_build(
            self.context, self.build_request, self.prepared)
        pipeline.reset_request_spec(self.request_spec, self.image)
        pipeline.move_to_build_request(
            self.admin, self.build_request, self.server.cell0,
            request_spec=self.request_spec,
            also=server_history.stash_in_move(
                self.admin, self.instance, self.context.request_id,
                self.history, also=self._journal_in_move_transaction()))
        if self.journal.step != Step.BUILD_REQUEST_WRITTEN:
            self.journal.advance(Step.BUILD_REQUEST_WRITTEN)

    def _journal_in_move_transaction(self):
        if not db_api.uses_nova_api_database():
            return None
        return lambda: self.journal.advance(Step.BUILD_REQUEST_WRITTEN)

    def _cast(self):
        record = self.server.record
        request_spec = pipeline.complete_request_spec(
            self.context, self.request_spec, self.networks,
            host=record.requested_host if record else None,
            node=record.requested_hypervisor_hostname if record else None)
        if not pipeline.still_pending(self.admin, self.instance.uuid):
            # Deleted while it moved: Nova's delete removed the
            # BuildRequest, so the conductor must not be asked to build it.
            raise ServerGone()
        self.journal.advance(Step.CASTING)
        pipeline.schedule_and_build(
            self.context, self.build_request, request_spec, self.image,
            self.prepared.admin_password, self.networks,
            pipeline.clone_bdms(self.bdms, self._new_image_id))

    def _execute(self):
        self._claim()
        self._move()
        if not pipeline.destroy_cell0_instance(
                self.admin, self.server.cell0, self.instance,
                task_state=CLAIM):
            # Nothing but this move should touch a claimed, unmapped row.
            raise pipeline.MoveConflict(uuid=self.instance.uuid)
        try:
            self.journal.advance(Step.CELL0_ROWS_REMOVED)
            self._cast()
        except ServerGone:
            # Nothing of a deleted server is kept, its journal neither.
            self.journal.destroy()
            return None
        except exception.JournalConflict:
            if pipeline.still_pending(self.admin, self.instance.uuid):
                raise
            # Deleted while it moved: the delete took the journal too.
            LOG.info('Server %s was deleted while it moved out of cell0',
                     self.instance.uuid)
            return None
        self.journal.finish(Status.DONE, step=Step.CAST_SENT)
        LOG.info('Server %s rebuilt from cell0: handed to the conductor '
                 'for scheduling', self.instance.uuid)
        return self.build_request

    def rollback(self, ex):
        if self.journal is None:
            return  # nothing claimed: another move runs, or never started
        try:
            undo(self.admin, self.server.cell0, self.journal, ex)
        except Exception:
            LOG.exception('Could not roll back the move of server %s out of '
                          'cell0; nova-cell0-rebuild-manage heal will',
                          self.instance.uuid)


def undo(admin, cell0, journal, ex):
    """Roll back a move that stopped before the conductor got it.

    Used by the task when a step fails, and by heal for a move a crash
    interrupted. Until the cell0 rows are gone the move is undone (the
    BuildRequest goes, the mapping points at cell0 again, the claim is
    released); after that the server is buried in cell0 again from its
    BuildRequest, as the conductor would have, with its original fault.
    """
    uuid = journal.instance_uuid
    if journal.step in (Step.CLAIMED, Step.BUILD_REQUEST_WRITTEN):
        # The journal may lag one step behind: with the plugin's tables
        # outside the API database, behind the BuildRequest; and when
        # recording the hard delete failed, behind the cell0 rows.
        build_request = pipeline.build_request_pending(admin, uuid)
        if build_request is None:
            pipeline.release(admin, cell0, uuid, CLAIM)
        elif nova_servers.get_cell0_instance(admin, cell0, uuid) is None:
            server_history.bury_again(admin, cell0, build_request,
                                      journal.fault_message)
        else:
            pipeline.move_back_to_cell0(admin, uuid, cell0)
            pipeline.release(admin, cell0, uuid, CLAIM)
    elif journal.step in (Step.CELL0_ROWS_REMOVED, Step.CASTING):
        build_request = pipeline.build_request_pending(admin, uuid)
        if build_request is not None:
            server_history.bury_again(admin, cell0, build_request,
                                      journal.fault_message)
    try:
        journal.finish(Status.ROLLED_BACK,
                       error=str(ex) or type(ex).__name__)
    except exception.JournalConflict:
        # Deleted with its server meanwhile: nothing left to record.
        LOG.debug('The journal of server %s is gone', uuid)
