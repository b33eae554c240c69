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

"""The notifications CERN's Aardvark waits for, built from a burial.

Aardvark was written against a patched Nova that puts a server that failed
to schedule in a ``pending`` state and announces the failure with an event
of its own. Each version of Aardvark wants two notifications for a buried
server, both in Nova's versioned format (fields under ``nova_object.data``):

* a scheduling event (``instance.schedule`` for the branch all_in_one,
  ``scheduler.select_destinations.error`` for master), at error priority:
  which servers one request asked for, the request's id and project, and
  the aggregates it was limited to;
* ``instance.update`` at info priority, with the transition
  ``building -> pending`` that starts the reaper, and the server's image
  and flavor sizes.

Only the fields Aardvark reads are promised; each builder below names the
Aardvark function that reads them.
"""

import dataclasses
import typing as ty

from nova_cell0_rebuild.conf import cell0_rebuild_relay as relay_conf

#: Where the payloads say they come from: they are ours, not Nova's.
NAMESPACE = 'nova_cell0_rebuild'
PAYLOAD_VERSION = '1.0'

ERROR = 'error'
INFO = 'info'


@dataclasses.dataclass
class Burial(object):
    """A server Nova buried in cell0, as the events describe it.

    :ivar instance_uuid: the server.
    :ivar project_id: its project (Aardvark decides whether it may reap
        for it).
    :ivar request_spec_id: the id of its RequestSpec: Aardvark's key for
        a request, the same at every burial of the server.
    :ivar flavor: the flavor's sizes: vcpus, memory_mb, root_gb,
        ephemeral_gb, swap (and flavorid, name when known).
    :ivar image_uuid: the server's image.
    :ivar reason: Nova's ExceptionPayload primitive of the failure.
    :ivar aggregates: the aggregate UUIDs the request was limited to (any
        of them), or None.
    :ivar block_devices: (boot_index, volume_id) of the server's block
        devices, to tell Aardvark master a server boots from a volume.
    :ivar user_id: its user.
    """

    instance_uuid: str
    project_id: str
    request_spec_id: int
    flavor: dict
    image_uuid: ty.Optional[str]
    reason: ty.Any = None
    aggregates: ty.Optional[ty.List[str]] = None
    block_devices: ty.List[tuple] = dataclasses.field(default_factory=list)
    user_id: ty.Optional[str] = None


@dataclasses.dataclass
class Event(object):
    """One notification to publish: ``notifier.<priority>(event_type)``."""

    priority: str
    event_type: str
    payload: dict


def _object(name, data):
    return {'nova_object.name': name,
            'nova_object.namespace': NAMESPACE,
            'nova_object.version': PAYLOAD_VERSION,
            'nova_object.data': data}


def _request_spec(burial, destination):
    data = {'id': burial.request_spec_id,
            'project_id': burial.project_id,
            'instance_uuid': burial.instance_uuid}
    if destination is not _OMITTED:
        data['requested_destination'] = destination
    return _object('AardvarkRequestSpecPayload', data)


_OMITTED = object()


def _all_in_one_destination(aggregates):
    """all_in_one's ``SchedulingEvent.aggregates`` (notifications/events.py)
    catches only KeyError: a ``requested_destination`` of None raises
    TypeError in its listener and the event is lost, so no aggregates means
    no key at all (it then reads None: any reaper worker). Its workers
    compare the list with their aggregates' UUIDs, one UUID an item.
    """
    if not aggregates:
        return _OMITTED
    return _object('AardvarkDestinationPayload',
                   {'aggregates': list(aggregates)})


def _master_destination(aggregates):
    """master's ``SchedulingEvent.aggregates`` (notifications/events.py)
    catches only TypeError: a missing key raises KeyError when the reaper
    is triggered and the server is reset to error, so no aggregates means
    ``requested_destination: None`` (it then takes Nova's aggregates whose
    metadata has ``cell_type=default``). It splits the first item on
    commas, as Nova writes aggregates in a RequestSpec.
    """
    if not aggregates:
        return None
    return _object('AardvarkDestinationPayload',
                   {'aggregates': [','.join(aggregates)]})


def scheduling_payload(burial, destination):
    """The payload both scheduling events share.

    Read by ``SchedulingEvent`` in aardvark/notifications/events.py (both
    branches): ``instance_uuids``, ``request_spec.nova_object.data.{id,
    project_id, requested_destination}``; all_in_one keeps ``reason``.
    """
    return _object('AardvarkSchedulingPayload', {
        'instance_uuids': [burial.instance_uuid],
        'request_spec': _request_spec(burial, destination),
        'reason': burial.reason,
    })


def _sizes(flavor):
    """The flavor's sizes as integers: Aardvark adds them up."""
    sizes = {key: int(flavor.get(key) or 0)
             for key in ('vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb',
                         'swap')}
    for key in ('flavorid', 'name'):
        if flavor.get(key) is not None:
            sizes[key] = flavor[key]
    return sizes


def state_update_payload(burial, with_block_devices):
    """The ``instance.update`` of a failed build: building -> pending.

    Read by ``StateUpdateEndpoint.info`` and ``InstanceUpdateEvent``
    (all_in_one) / ``StateUpdateEvent.from_payload`` (master) in
    aardvark/notifications/: ``uuid``, ``image_uuid``,
    ``flavor.nova_object.data.{vcpus, memory_mb, root_gb, ephemeral_gb,
    swap}``, ``state_update.nova_object.data.{old_state, state,
    old_task_state, new_task_state}``; master also reads
    ``block_devices[*].nova_object.data.{boot_index, volume_id}`` (a boot
    index 0 means a volume-backed server: it asks Cinder for the image and
    leaves DISK_GB out of the request).
    """
    data = {
        'uuid': burial.instance_uuid,
        'tenant_id': burial.project_id,
        'user_id': burial.user_id,
        'image_uuid': burial.image_uuid,
        'flavor': _object('AardvarkFlavorPayload', _sizes(burial.flavor)),
        'state': 'pending',
        'state_update': _object('AardvarkStateUpdatePayload', {
            'old_state': 'building', 'state': 'pending',
            'old_task_state': None, 'new_task_state': None}),
    }
    if with_block_devices:
        data['block_devices'] = [
            _object('AardvarkBlockDevicePayload',
                    {'boot_index': boot_index, 'volume_id': volume_id})
            for boot_index, volume_id in burial.block_devices]
    return _object('AardvarkInstanceUpdatePayload', data)


def all_in_one_events(burial):
    """The events of Aardvark's branch all_in_one (2018).

    ``SchedulingEndpoint.error`` takes ``instance.schedule`` at error
    priority; ``StateUpdateEndpoint.info`` then takes ``instance.update``
    (aardvark/notifications/endpoints.py).
    """
    return [
        Event(ERROR, 'instance.schedule', scheduling_payload(
            burial, _all_in_one_destination(burial.aggregates))),
        Event(INFO, 'instance.update',
              state_update_payload(burial, with_block_devices=False)),
    ]


def master_events(burial):
    """The events of Aardvark's branch master (2020).

    ``SchedulingEndpoint.error`` takes
    ``scheduler.select_destinations.error`` at error priority and stores
    it; ``StateUpdateEndpoint.info`` then takes ``instance.update``
    (aardvark/notifications/endpoints.py).
    """
    return [
        Event(ERROR, 'scheduler.select_destinations.error',
              scheduling_payload(burial,
                                 _master_destination(burial.aggregates))),
        Event(INFO, 'instance.update',
              state_update_payload(burial, with_block_devices=True)),
    ]


BUILDERS = {relay_conf.ALL_IN_ONE: all_in_one_events,
            relay_conf.MASTER: master_events}


def events_for(version, burial):
    """The events announcing *burial* to Aardvark *version*."""
    return BUILDERS[version](burial)
