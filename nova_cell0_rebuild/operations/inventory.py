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

"""What is buried in cell0, and whether each server can be rebuilt."""

from oslo_config import cfg
from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_cell0_rows as cell0_rows
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.gates import base as gates_base
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.tasks import rebuild_from_cell0 as rebuild_task

CONF = cfg.CONF

#: The rebuild body the verdicts are given for: the server's own image.
_VERDICT_BODY = {}


def _age(instance, now):
    created = instance.created_at.replace(tzinfo=None)
    return int((now - created).total_seconds())


def _as_a_rebuild_finds_it(admin, instance, lease_seconds,
                           journal=move_journal.UNREAD):
    """The instance the gates judge, and whether a move is healed first.

    A move of ours that stopped after its claim (a crash, a restart)
    leaves the claim's task state on the cell0 row until its lease runs
    out; then a rebuild heals it, which releases the claim, and rebuilds.
    The listing judges such a server as that rebuild will, on a copy:
    nothing is written. One indexed look-up, only for claimed servers,
    unless *journal* (the server's, or None) was read already.
    """
    if instance.task_state != rebuild_task.CLAIM:
        return instance, False
    if journal is move_journal.UNREAD:
        journal = objects.MoveJournal.get_by_instance_uuid(admin,
                                                           instance.uuid)
    if journal is None or not journal.lease_expired(lease_seconds):
        return instance, False
    released = instance.obj_clone()
    released.task_state = None
    return released, True


#: How Nova's API writes times: 2026-01-31T12:00:00Z (UTC).
ISOTIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'


def isotime(when):
    """UTC, as Nova's API writes times."""
    return when.replace(tzinfo=None).strftime(ISOTIME_FORMAT)


def _buried(server):
    """When the server was last buried (naive UTC): its latest fault (the
    conductor writes it as it buries), else its last update.
    """
    if server.fault is not None and server.fault.created_at:
        return server.fault.created_at.replace(tzinfo=None)
    instance = server.instance
    return (instance.updated_at or instance.created_at).replace(tzinfo=None)


def _entry(server, verdicts, now, interrupted_move=False, journal=None):
    refusals = [(gate, refusal) for gate, refusal in verdicts if refusal]
    instance = server.instance
    record = server.record
    return {
        'uuid': instance.uuid,
        'project_id': instance.project_id,
        'user_id': instance.user_id,
        'name': instance.display_name,
        'age_seconds': _age(instance, now),
        'buried_at': isotime(_buried(server)),
        'rebuild_attempts': journal.attempts if journal else 0,
        'fault': server.fault.message if server.fault else None,
        'recorded': server.record is not None,
        # What its create asked of a wait for room (pending/), if recorded.
        'wait_deadline': record.wait_deadline if record else None,
        'wait_refusal': record.wait_refusal if record else None,
        'rebuildable': not refusals,
        'interrupted_move': interrupted_move,
        'refused_by': refusals[0][0] if refusals else None,
        'reason': str(refusals[0][1]) if refusals else None,
        'verdicts': [(gate, str(refusal) if refusal else 'allowed')
                     for gate, refusal in verdicts],
    }


def cell0_page(context, gates, project_id=None, marker=None, limit=50,
               lease_seconds=None, judge_context=None):
    """One page of cell0 servers with every gate's verdict.

    Seven indexed queries a page, plus the quota gate's reads for each
    server on it (8 with Nova's legacy quota driver), however many servers
    cell0 holds; no gate writes.

    :param lease_seconds: when a move's lease runs out (default
        ``[cell0_rebuild] move_lease_seconds``).
    :param judge_context: the context the gates judge a rebuild of (the
        lock gate lets an admin through); by default an admin's.
    :returns: (entries, next marker or None).
    """
    admin = context.elevated()
    if lease_seconds is None:
        lease_seconds = CONF.cell0_rebuild.move_lease_seconds
    cell0 = cell0_rows.get_cell0(admin)
    instances, faults, mappings = nova_servers.list_cell0_instances(
        admin, cell0, project_id=project_id, marker=marker, limit=limit)
    records = objects.CreateRecord.get_for_instances(admin, instances)
    journals = objects.MoveJournal.get_by_instance_uuids(
        admin, [instance.uuid for instance in instances])
    now = timeutils.utcnow()
    entries = []
    for instance in instances:
        mapping = mappings.get(instance.uuid)
        if mapping is None:
            continue  # not a server any more: deleted under us
        journal = journals.get(instance.uuid)
        judged, interrupted = _as_a_rebuild_finds_it(
            admin, instance, lease_seconds, journal=journal)
        server = gates_base.Cell0Server(
            context=judge_context or admin, instance=judged,
            mapping=mapping, cell0=cell0, record=records.get(instance.uuid),
            fault=faults.get(instance.uuid), read_only=True)
        entries.append(_entry(server, gates.verdicts(server, _VERDICT_BODY),
                              now, interrupted_move=interrupted,
                              journal=journal))
    next_marker = instances[-1].uuid if len(instances) == limit else None
    return entries, next_marker


def cell0_servers(context, gates, project_id=None, rebuildable=None,
                  older_than=None, limit=50, progress=None, marker=None,
                  pages=None):
    """Cell0 servers after *marker*, page by page, filtered.

    :param progress: called after each page with the count scanned so far
        and the marker of the next page (None after the last).
    :param pages: stop after this many pages (None: all).
    """
    scanned = 0
    while pages is None or pages > 0:
        if pages is not None:
            pages -= 1
        entries, marker = cell0_page(context, gates, project_id=project_id,
                                     marker=marker, limit=limit)
        scanned += len(entries)
        for entry in entries:
            if rebuildable is not None and entry['rebuildable'] != (
                    rebuildable):
                continue
            if older_than is not None and entry['age_seconds'] < older_than:
                continue
            yield entry
        if progress is not None:
            progress(scanned, marker)
        if marker is None:
            return


def _fields(obj):
    if obj is None:
        return None
    values = {}
    for key in sorted(obj.fields):
        value = getattr(obj, key) if obj.obj_attr_is_set(key) else None
        if hasattr(value, 'isoformat'):
            value = value.isoformat()
        values[key] = value
    return values


def cell0_server(context, gates, mapping, judge_context=None,
                 lease_seconds=None):
    """One cell0 server with every gate's verdict, or None if not there.

    :param mapping: the server's InstanceMapping; a server not mapped to
        cell0 is None.
    :param judge_context: as :func:`cell0_page`.
    :returns: (entry, CreateRecord or None), or None.
    """
    if mapping is None or not nova_servers.is_cell0(mapping.cell_mapping):
        return None
    admin = context.elevated()
    if lease_seconds is None:
        lease_seconds = CONF.cell0_rebuild.move_lease_seconds
    instance = nova_servers.get_cell0_instance(admin, mapping.cell_mapping,
                                               mapping.instance_uuid)
    if instance is None:
        return None
    journal = objects.MoveJournal.get_by_instance_uuid(admin, instance.uuid)
    judged, interrupted = _as_a_rebuild_finds_it(admin, instance,
                                                 lease_seconds,
                                                 journal=journal)
    server, _bdms = gates_base.Cell0Server.load(admin, judged, mapping,
                                                read_only=True)
    server.context = judge_context or admin
    entry = _entry(server, gates.verdicts(server, _VERDICT_BODY),
                   timeutils.utcnow(), interrupted_move=interrupted,
                   journal=journal)
    return entry, server.record


def show(context, gates, instance_uuid):
    """A server's create record, move journal and, in cell0, verdicts."""
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, instance_uuid)
    entry = None
    found = cell0_server(context, gates, mapping)
    if found is not None:
        entry, record = found
    if entry is None:
        record = record_keeping.record_of_server(admin, instance_uuid)
    if mapping is None:
        where = None
    elif mapping.cell_mapping is None:
        where = 'no cell (building)'
    else:
        where = mapping.cell_mapping.name
    return {
        'uuid': instance_uuid,
        'mapped_to': where,
        'cell0': entry,
        'create_record': _fields(record),
        'move_journal': _fields(objects.MoveJournal.get_by_instance_uuid(
            admin, instance_uuid)),
    }
