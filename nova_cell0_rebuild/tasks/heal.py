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

A journal left ``in_progress`` by a process that stopped is compared with
where the server really is, and the move is finished or undone so that the
server exists exactly once and its mapping agrees:

==========================================  ================================
server found                                heal
==========================================  ================================
deleted (no mapping, or queued for delete)  leftovers removed, journal gone
in a real cell                              done: the conductor built it
mapped to cell0                             claim released: rolled back
BuildRequest and a cell0 row                BuildRequest removed, mapped to
                                            cell0 again: rolled back
BuildRequest, no cell0 row, not yet cast    buried in cell0 again with its
                                            fault: rolled back
BuildRequest, cast perhaps sent             left alone and reported: the
                                            conductor may still build it
==========================================  ================================

Running heal again changes nothing: a healed journal is no longer in
progress.
"""

from oslo_log import log as logging

from nova_cell0_rebuild.adapters import nova_create_pipeline as pipeline
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.tasks import rebuild_from_cell0

LOG = logging.getLogger(__name__)

Step = fields.MoveStep
Status = fields.MoveStatus

DELETED = 'deleted'
DONE = 'done'
ROLLED_BACK = 'rolled back'
LEFT_ALONE = 'left alone: the cast may have been sent'


def heal_move(context, journal):
    """Heal one interrupted move; returns what was done (a phrase)."""
    admin = context.elevated()
    uuid = journal.instance_uuid
    cell0 = pipeline.get_cell0(admin)
    mapping = nova_servers.get_mapping(admin, uuid)
    if mapping is None or mapping.queued_for_delete:
        pipeline.drop_build_request(admin, uuid)
        instance = nova_servers.get_cell0_instance(admin, cell0, uuid)
        if instance is not None:
            pipeline.destroy_cell0_instance(admin, cell0, instance)
        journal.destroy()
        outcome = DELETED
    elif mapping.cell_mapping is not None and not nova_servers.is_cell0(
            mapping.cell_mapping):
        journal.finish(Status.DONE)
        outcome = DONE
    elif journal.step == Step.CASTING and mapping.cell_mapping is None:
        # Burying it again would make the conductor, if it got the cast
        # late, delete the mapping of a server that then lives in cell0.
        outcome = LEFT_ALONE
    else:
        stranded = mapping.cell_mapping is None and (
            nova_servers.get_cell0_instance(admin, cell0, uuid) is not None)
        if stranded:
            # The transaction committed, the cell0 rows were not removed:
            # undo from the start of the move.
            journal.step = Step.BUILD_REQUEST_WRITTEN
        rebuild_from_cell0.undo(admin, cell0, journal,
                                RuntimeError('interrupted, healed'))
        outcome = ROLLED_BACK
    LOG.info('Healed the move of server %s out of cell0 (step %s): %s',
             uuid, journal.step, outcome)
    return outcome


def heal(context, older_than=60, instance_uuid=None):
    """Heal every move in progress not updated for *older_than* seconds.

    :returns: a list of (instance_uuid, step, outcome).
    """
    results = []
    for journal in objects.MoveJournal.list_in_progress(
            context, older_than=older_than, instance_uuid=instance_uuid):
        step = journal.step
        results.append((journal.instance_uuid, step,
                        heal_move(context, journal)))
    return results
