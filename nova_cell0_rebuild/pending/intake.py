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

"""Intake: a buried server whose create opted in starts to wait.

From Nova's burial notification (``compute_task.build_instances.error``,
read as the relay reads it) and from the sweep, which finds the burials
whose notification was missed by paging cell0. The opt-in is the create
record's ``wait_deadline``, honoured when no ``wait_refusal`` was recorded
at create (the filter evaluated the policy then, for the person who
asked); the row, once written, is the truth (spec "Opt-in").
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_cell0_listing
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.gates import base as gates_base
from nova_cell0_rebuild.notifications import wait as wait_notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import cell0_wait_queue as queue
from nova_cell0_rebuild.objects import fields
from nova_cell0_rebuild.pending import deadline as deadlines
from nova_cell0_rebuild.pending import shapes
from nova_cell0_rebuild.relay import burials

LOG = logging.getLogger(__name__)

Reason = fields.WaitReason

#: Servers read from cell0 per page of the sweep.
PAGE_SIZE = 100


def honoured(record):
    """The raw deadline a create record opts in with, or None."""
    if record is None:
        return None
    opt_in = wait_opt_in.OptIn(record.wait_deadline, record.wait_refusal)
    return opt_in.raw if opt_in.honoured else None


def open_wait(context, conf, instance, raw, buried_at, failure=None,
              now=None):
    """Insert the wait of a buried server and compute its shape.

    :param raw: the create's ``cell0_rebuild:wait`` value.
    :param buried_at: the server's burial: its place in the order and
        what a duration counts from.
    :param failure: the exception name Nova buried it for, when known:
        only NoValidHost waits; any other is recorded ended (the fault gate
        would refuse its rebuild).
    :returns: the Cell0Wait, or None when the value cannot be read or a
        row was written since the caller found none (a user's cancel, say:
        never restarted here).
    """
    options = conf.cell0_rebuild_pending
    try:
        resolved = deadlines.resolve(raw, buried_at, buried_at,
                                     options.max_wait_seconds)
    except deadlines.MalformedDeadline as malformed:
        LOG.warning('Server %s does not wait: %s', instance.uuid, malformed)
        return None
    reason_code = last_reason = None
    if resolved.clamped:
        reason_code = Reason.CLAMPED
        last_reason = ('the deadline %s was later than [cell0_rebuild_pending]'
                       ' max_wait_seconds allows: clamped' % raw)
    wait = objects.Cell0Wait.open_new(
        context, instance.uuid, instance.project_id, instance.user_id,
        fields.WaitSource.METADATA, buried_at, resolved.deadline,
        reason_code=reason_code, last_reason=last_reason)
    if wait is None:
        return None  # a row was written since it was looked for
    if failure is not None and not nova_compute.is_rebuildable_burial(
            failure):
        wait.end(Reason.GATE_REFUSED, 'the server was buried for %s, not '
                 'for want of room' % failure, now=now)
        return wait
    wait_notifications.notify_start(context, wait)
    compute_shape(context, wait, now=now)
    return wait


def compute_shape(context, wait, now=None):
    """Compute and store the wait's request shape; returns its key.

    None when it has none: no candidate is possible (the reason is noted,
    no query is sent until it is computed again) or the server left cell0.
    """
    try:
        queries = shapes.compute(context, wait.instance_uuid)
    except (exception.NoCandidatePossible,
            exception.RequestRefused) as refused:
        wait.set_shape(None, now=now)
        wait.note(Reason.NO_CANDIDATE, str(refused))
        return None
    if queries is None:
        return None
    key = objects.Cell0WaitShape.ensure(context, queries)
    wait.set_shape(key, now=now)
    return key


def intake(context, conf, payload, now=None):
    """A burial notification: the server waits if its create opted in.

    :param payload: Nova's ComputeTaskPayload primitive.
    :returns: the Cell0Wait opened, or None (not opted in, not enabled,
        already waiting, no longer in cell0).
    """
    if not conf.cell0_rebuild_pending.enabled:
        return None
    try:
        notice = burials.read_notice(payload)
    except burials.NotAnnounced:
        return None
    uuid = notice.instance_uuid
    if objects.Cell0Wait.get_by_instance_uuid(context, uuid) is not None:
        return None  # the row is the truth; a re-burial is a settle
    mapping = nova_servers.get_mapping(context, uuid)
    if (mapping is None or mapping.queued_for_delete
            or not nova_servers.is_cell0(mapping.cell_mapping)):
        return None
    instance = nova_compute.get_server_in_cell(context, mapping)
    server, _bdms = gates_base.Cell0Server.load(context, instance, mapping,
                                                read_only=True)
    raw = honoured(server.record)
    if raw is None or not wait_opt_in.project_enabled(
            conf, instance.project_id):
        return None
    buried_at = (server.fault.created_at if server.fault is not None
                 else timeutils.utcnow())
    return open_wait(context, conf, instance, raw,
                     timeutils.normalize_time(buried_at),
                     failure=notice.exception, now=now)


def sweep_intake(context, conf, page_size=PAGE_SIZE, now=None):
    """Open the waits of opted-in buried servers that have no row.

    Pages cell0 (``nova_cell0_listing.pages``); per page a constant
    number of statements (the page, its rows in our table, its create
    records), then the writes of each server that starts to wait.

    :returns: the Cell0Waits opened.
    """
    if not conf.cell0_rebuild_pending.enabled:
        return []
    cell0 = nova_cell0_listing.get_cell0(context)
    opened = []
    for page in nova_cell0_listing.pages(context, cell0, page_size):
        known = queue.waiting_among(context, [i.uuid for i in page])
        new = [i for i in page if i.uuid not in known
               and wait_opt_in.project_enabled(conf, i.project_id)]
        records = objects.CreateRecord.get_for_instances(context, new)
        for instance in new:
            raw = honoured(records.get(instance.uuid))
            if raw is None:
                continue
            # The burial's last write to the row dates it.
            buried_at = instance.updated_at or instance.created_at
            wait = open_wait(context, conf, instance, raw,
                             timeutils.normalize_time(buried_at), now=now)
            if wait is not None:
                opened.append(wait)
    return opened
