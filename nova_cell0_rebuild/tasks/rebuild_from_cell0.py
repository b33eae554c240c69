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

1. claim the cell0 instance (compare-and-swap on its task state);
2. restore its RequestSpec as a one-server create;
3. write a BuildRequest built from it, with the rebuild's changes, and
   point its mapping at no cell, in one API-database transaction;
4. hard-delete its cell0 rows;
5. cast Nova's own ``schedule_and_build_instances``.

From step 3 on the server is served from its BuildRequest (status BUILD);
Nova's conductor then schedules it, creates it in a cell and builds it, or
buries it in cell0 again, from where it can be rebuilt again.
"""

from nova.compute import task_states
from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_create_pipeline as pipeline
from nova_cell0_rebuild.tasks import base

LOG = logging.getLogger(__name__)

#: The task state that claims a cell0 instance while it is moved.
CLAIM = task_states.REBUILDING


class RebuildFromCell0Task(base.TaskBase):
    """Move one cell0 server back into Nova's create pipeline.

    :param context: the caller's context; compute acts with it (image,
        network and volume calls), as for a create.
    :param server: the gates' Cell0Server.
    :param prepared: the validated rebuild (nova_compute.PreparedRebuild).
    :param networks: NetworkRequestList from the create record, or None.
    """

    def __init__(self, context, server, prepared, networks, bdms):
        super().__init__(context, server.instance)
        self.server = server
        self.prepared = prepared
        self.networks = networks
        self.bdms = bdms
        self.build_request = None
        self._claimed = False
        self._moved = False
        self._cell0_rows_gone = False

    def _execute(self):
        admin = self.context.elevated()
        cell0 = self.server.cell0
        pipeline.claim(admin, cell0, self.instance, CLAIM)
        self._claimed = True

        new_image_id = (self.prepared.image_id
                        if self.prepared.image_changed else None)
        self.build_request = pipeline.new_build_request(
            self.context, self.instance, self.bdms, self.prepared.updates,
            new_image_id=new_image_id)
        image = pipeline.image_for_build(self.context, self.build_request,
                                         self.prepared)
        request_spec = pipeline.restore_request_spec(
            self.context, self.build_request, self.networks, image)

        pipeline.move_to_build_request(admin, self.build_request, cell0)
        self._moved = True
        pipeline.destroy_cell0_instance(admin, cell0, self.instance)
        self._cell0_rows_gone = True

        pipeline.schedule_and_build(
            self.context, self.build_request, request_spec, image,
            self.prepared.admin_password, self.networks,
            pipeline.clone_bdms(self.bdms, new_image_id))
        LOG.info('Server %s rebuilt from cell0: handed to the conductor '
                 'for scheduling', self.instance.uuid)
        return self.build_request

    def rollback(self, ex):
        admin = self.context.elevated()
        cell0 = self.server.cell0
        uuid = self.instance.uuid
        if self._cell0_rows_gone:
            # Only the cast failed: the server is a BuildRequest nobody
            # schedules. It shows as BUILD and can be deleted.
            LOG.error('Server %s left cell0 but could not be handed to the '
                      'conductor: %s', uuid, ex)
            return
        if self._moved:
            pipeline.move_back_to_cell0(admin, uuid, cell0)
        if self._claimed:
            pipeline.release(admin, cell0, self.instance, CLAIM)
