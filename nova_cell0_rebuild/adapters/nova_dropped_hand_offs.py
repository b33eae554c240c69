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

"""What Nova's conductor leaves of a hand-off it dropped.

The conductor's ``schedule_and_build_instances`` is a cast: if it fails
before it maps the server to a cell and without burying it (its database
failing over under it, say), nothing answers and nothing retries. Nova
leaves the server in BUILD as its BuildRequest, mapped to no cell,
perhaps with the allocation its scheduler claimed, as it leaves a create
at that moment. Heal finds such servers
(``nova_build_requests.unmapped_before``), proves here that no cell has
an instance row of them, releases their allocation and buries them in
cell0 again (tasks/heal.py).
"""

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as main_models
from nova.scheduler.client import report

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception


def cells_holding(context, instance_uuid, live_only=False):
    """The names of the real cells (not cell0) with an instance row of the
    server, deleted or not (only not, with *live_only*).

    The conductor creates the instance in its cell before it maps it: a
    row there means it got that far, and the server is not the plugin's
    to bury. A cell that cannot be read raises: the caller must not
    conclude the row is absent.
    """
    nova_context.load_cells()
    holding = []
    for cell in nova_context.CELLS:
        if nova_servers.is_cell0(cell):
            continue
        with nova_context.target_cell(context, cell) as cctxt:
            with main_db_api.get_context_manager(cctxt).reader.using(
                    cctxt) as session:
                query = session.query(main_models.Instance.id).filter_by(
                    uuid=instance_uuid)
                if live_only:
                    query = query.filter_by(deleted=0)
                found = query.first()
        if found is not None:
            holding.append(cell.name or cell.uuid)
    return holding


def release_allocation(context, instance_uuid):
    """Remove what placement holds for the server (its consumer).

    A server buried in cell0 holds nothing; what the dropped hand-off's
    scheduler claimed would make the next build's claim of the same
    consumer fail.

    :raises: AllocationNotReleased when placement cannot be reached: Nova's
        report client then logs and returns None instead of raising, and
        the caller must not go on as if the claim were gone.
    """
    released = report.report_client_singleton(
    ).delete_allocation_for_instance(context, instance_uuid, force=True)
    if released is None:
        raise exception.AllocationNotReleased(uuid=instance_uuid)
