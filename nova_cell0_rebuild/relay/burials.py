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

"""Which of Nova's notifications announce a burial, and whether to pass it on.

Nova's conductor sends ``compute_task.build_instances.error`` (a
``ComputeTaskPayload``) for each server it buries in cell0, after the
server's rows, mapping and fault are written. A burial is passed on to
Aardvark only if a rebuild from cell0 would be accepted now: the verdict is
the manage command's (:func:`nova_cell0_rebuild.operations.inventory.
cell0_server`, with the enabled gates), because Aardvark deletes
pre-emptible servers before it asks for the rebuild, and would delete them
for nothing if a gate then refused it.
"""

import dataclasses
import typing as ty

from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.adapters import nova_notifications
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.relay import aardvark_events

EVENT_TYPE = 'compute_task.build_instances.error'
#: The failure Aardvark can do something about: no host had room.
NO_VALID_HOST = 'NoValidHost'
#: What oslo.messaging appends to the name of an exception it rebuilds on
#: the caller's side of an RPC call (``deserialize_remote_exception`` in
#: oslo_messaging/_drivers/common.py makes a subclass ``<name>_Remote``).
REMOTE_SUFFIX = '_Remote'
#: The exception names announced, as Nova's ExceptionPayload names the
#: class of the exception its conductor holds: the scheduler raises
#: NoValidHost in its own process, so in a cloud the conductor holds
#: ``NoValidHost_Remote``; plain ``NoValidHost`` when the exception did
#: not cross a real transport (a NoValidHost the conductor raises itself,
#: or oslo.messaging's fake driver, which passes the original through).
ANNOUNCED_FAILURES = frozenset([NO_VALID_HOST,
                                NO_VALID_HOST + REMOTE_SUFFIX])


class NotAnnounced(Exception):
    """A burial that is not passed on; the message says why, in one line."""


@dataclasses.dataclass
class Notice(object):
    """What Nova's notification says of a buried server."""

    instance_uuid: str
    exception: ty.Optional[str]
    reason: ty.Any
    request_spec: ty.Optional[dict]


def _data(primitive):
    """The fields of a versioned object's primitive, or None."""
    if not isinstance(primitive, dict):
        return None
    return primitive.get('nova_object.data')


def read_notice(payload):
    """Nova's ComputeTaskPayload primitive as a Notice.

    :raises: NotAnnounced when the payload names no server.
    """
    data = _data(payload) or {}
    instance_uuid = data.get('instance_uuid')
    if not instance_uuid:
        raise NotAnnounced('the notification names no server')
    reason = data.get('reason')
    return Notice(instance_uuid=instance_uuid,
                  exception=(_data(reason) or {}).get('exception'),
                  reason=reason,
                  request_spec=_data(data.get('request_spec')))


def _aggregates(spec):
    """The aggregates a request was limited to: Nova's first item, split.

    Nova keeps ``requested_destination.aggregates`` as a list of
    comma-separated UUIDs, each item one "any of these" choice; Aardvark
    reads the first item only.
    """
    aggregates = (_data(spec.get('requested_destination')) or {}).get(
        'aggregates')
    if not aggregates:
        return None
    return [uuid for uuid in aggregates[0].split(',') if uuid] or None


def _image_uuid(spec):
    return (_data(spec.get('image')) or {}).get('id')


def _block_devices(context, mapping):
    """The server's volumes, as Nova lists them in ``instance.update``
    (BlockDevicePayload.from_instance: volumes only): an image-backed
    server's root disk, boot index 0 without a volume, would make
    Aardvark master take it for a volume-backed one.
    """
    bdms, _fault, _request_id = nova_compute.load_cell0_details(
        context, mapping.cell_mapping, mapping.instance_uuid)
    return [(bdm.boot_index, bdm.volume_id) for bdm in bdms
            if bdm.volume_id is not None]


def judge(context, gates, notice):
    """The Burial to announce for a Notice.

    Reads Nova's databases and ours: a transient database error is
    raised as is (the caller asks for the notification again).

    :param context: an admin RequestContext.
    :param gates: the enabled gates (``gates.load_gates``).
    :returns: an :class:`.aardvark_events.Burial`.
    :raises: NotAnnounced saying why the burial is not passed on.
    """
    if notice.exception not in ANNOUNCED_FAILURES:
        raise NotAnnounced('the failure is %s, not %s' % (notice.exception,
                                                          NO_VALID_HOST))
    spec = notice.request_spec
    if not spec:
        raise NotAnnounced('the notification carries no RequestSpec')
    mapping = nova_servers.get_mapping(context, notice.instance_uuid)
    found = inventory.cell0_server(context, gates, mapping)
    if found is None:
        raise NotAnnounced('it is not in cell0 (deleted, or rebuilt out of '
                           'it already)')
    entry, _record = found
    if not entry['rebuildable']:
        raise NotAnnounced('a rebuild from cell0 would be refused by gate '
                           '%s: %s' % (entry['refused_by'], entry['reason']))
    request_spec_id = nova_notifications.request_spec_id(
        context, notice.instance_uuid)
    if request_spec_id is None:
        raise NotAnnounced('it has no RequestSpec')
    flavor = _data(spec.get('flavor'))
    if not flavor:
        raise NotAnnounced('the notification carries no flavor')
    return aardvark_events.Burial(
        instance_uuid=notice.instance_uuid,
        project_id=entry['project_id'],
        user_id=entry['user_id'],
        request_spec_id=request_spec_id,
        flavor=flavor,
        image_uuid=_image_uuid(spec),
        reason=notice.reason,
        aggregates=_aggregates(spec),
        block_devices=_block_devices(context, mapping))
