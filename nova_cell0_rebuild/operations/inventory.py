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

from oslo_utils import timeutils

from nova_cell0_rebuild.adapters import nova_create_pipeline as pipeline
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.gates import base as gates_base
from nova_cell0_rebuild import objects

#: The rebuild body the verdicts are given for: the server's own image.
_VERDICT_BODY = {}


def _age(instance, now):
    created = instance.created_at.replace(tzinfo=None)
    return int((now - created).total_seconds())


def _entry(server, verdicts, now):
    refusals = [(gate, refusal) for gate, refusal in verdicts if refusal]
    instance = server.instance
    return {
        'uuid': instance.uuid,
        'project_id': instance.project_id,
        'user_id': instance.user_id,
        'name': instance.display_name,
        'age_seconds': _age(instance, now),
        'fault': server.fault.message if server.fault else None,
        'recorded': server.record is not None,
        'rebuildable': not refusals,
        'refused_by': refusals[0][0] if refusals else None,
        'reason': str(refusals[0][1]) if refusals else None,
        'verdicts': [(gate, str(refusal) if refusal else 'allowed')
                     for gate, refusal in verdicts],
    }


def cell0_page(context, gates, project_id=None, marker=None, limit=50):
    """One page of cell0 servers with every gate's verdict.

    A fixed number of indexed queries a page (plus one quota count per
    project on it), however many servers cell0 holds; no gate writes.

    :returns: (entries, next marker or None).
    """
    admin = context.elevated()
    cell0 = pipeline.get_cell0(admin)
    instances, faults, mappings = nova_servers.list_cell0_instances(
        admin, cell0, project_id=project_id, marker=marker, limit=limit)
    records = objects.CreateRecord.get_for_instances(admin, instances)
    now = timeutils.utcnow()
    entries = []
    for instance in instances:
        server = gates_base.Cell0Server(
            context=admin, instance=instance,
            mapping=mappings.get(instance.uuid), cell0=cell0,
            record=records.get(instance.uuid),
            fault=faults.get(instance.uuid), read_only=True)
        if server.mapping is None:
            continue  # not a server any more: deleted under us
        entries.append(_entry(server, gates.verdicts(server, _VERDICT_BODY),
                              now))
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


def show(context, gates, instance_uuid):
    """A server's create record, move journal and, in cell0, verdicts."""
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, instance_uuid)
    entry = None
    if mapping is not None and nova_servers.is_cell0(mapping.cell_mapping):
        cell0 = mapping.cell_mapping
        instance = nova_servers.get_cell0_instance(admin, cell0,
                                                   instance_uuid)
        if instance is not None:
            server, _bdms = gates_base.Cell0Server.load(
                admin, instance, mapping, read_only=True)
            record = server.record
            entry = _entry(server, gates.verdicts(server, _VERDICT_BODY),
                           timeutils.utcnow())
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
