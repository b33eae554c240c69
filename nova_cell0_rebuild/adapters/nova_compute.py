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

"""Adapter for Nova's compute API: a cell0 server, and rebuild validation.

Everything here mirrors what ``nova.compute.api.API.rebuild`` and Nova's
rebuild handler check, answering with the same status and message.
"""

import dataclasses
import typing as ty

from nova.api.openstack import common
from nova.api.openstack.compute import helpers
from nova.api.openstack.compute import servers as servers_api
from nova.compute import api as compute_api
from nova.compute import utils as compute_utils
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova import utils as nova_utils
import webob.exc

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_release
from nova_cell0_rebuild import exception

VM_STATE_ERROR = vm_states.ERROR

#: Raised when a compare-and-swap on an instance's task state fails.
UnexpectedTaskState = nova_exception.UnexpectedTaskStateError

#: What a rebuild copies from the cell0 instance (not 'fault': it cannot be
#: joined, and a BuildRequest has none; not what a build sets afresh, such
#: as vcpu_model, resources, migration_context or ec2_ids).
INSTANCE_ATTRS = ['metadata', 'system_metadata', 'info_cache',
                  'security_groups', 'flavor', 'keypairs', 'trusted_certs',
                  'pci_requests', 'numa_topology', 'device_metadata', 'tags']

# Nova buries a server in cell0 with the exception that failed scheduling;
# NoValidHost (and its subclass MaxRetriesExceeded) is a lack of capacity.
_SCHEDULING_FAILURES = (nova_exception.NoValidHost,
                        nova_exception.MaxRetriesExceeded)

#: Outages of the cloud's own database or message bus that failed the
#: conductor's scheduling: Nova buries the server all the same. Nova
#: records an exception that is not its own by its class name alone
#: (compute.utils.exception_to_dict); one that came back over RPC from the
#: scheduler is oslo.messaging's subclass named with "_Remote".
_OUTAGES = frozenset(name + suffix
                     for name in ('DBConnectionError', 'DBDeadlock',
                                  'MessagingTimeout')
                     for suffix in ('', '_Remote'))
#: The exception names of every burial gate ``fault`` lets through, as
#: Nova's notifications give them.
_REBUILDABLE_BURIALS = _OUTAGES | frozenset(
    failure.__name__ + suffix for failure in _SCHEDULING_FAILURES
    for suffix in ('', '_Remote'))

_COMPUTE_API = None


def _compute_api():
    global _COMPUTE_API
    if _COMPUTE_API is None:
        _COMPUTE_API = compute_api.API()
    return _COMPUTE_API


def get_server_in_cell(context, mapping):
    """Load a mapped server from its cell for the caller, as Nova's API does.

    Nova's ``compute.api.get`` would read the mapping again, load the
    instance in a worker greenthread and leave the request context targeted
    at the cell; here the mapping in hand is used and only the instance
    keeps a context targeted at its cell.

    :raises: RequestRefused(404) with Nova's own message when the caller's
        project may not see it (Nova's query is project-scoped).
    """
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        try:
            return nova_objects.Instance.get_by_uuid(
                cctxt, mapping.instance_uuid, expected_attrs=INSTANCE_ATTRS)
        except nova_exception.InstanceNotFound as exc:
            raise exception.RequestRefused(404, exc.format_message())


def load_cell0_details(context, cell0, instance_uuid):
    """Return (bdms, latest fault, create request id) of a cell0 server."""
    with nova_context.target_cell(context.elevated(), cell0) as cctxt:
        # One read transaction: Nova's object methods join it.
        with main_db_api.get_context_manager(cctxt).reader.using(cctxt):
            bdms = nova_objects.BlockDeviceMappingList.get_by_instance_uuid(
                cctxt, instance_uuid)
            fault = nova_objects.InstanceFault.get_latest_for_instance(
                cctxt, instance_uuid)
            actions = nova_objects.InstanceActionList.get_by_instance_uuid(
                cctxt, instance_uuid)
    create_request_id = next((action.request_id for action in actions
                              if action.action == 'create'), None)
    return bdms, fault, create_request_id


def is_rebuildable_burial(exception_name):
    """Whether Nova buried a server for a failure gate ``fault`` lets
    through, by the exception's name as its notifications give it
    (``ExceptionPayload``: the class name, ``_Remote`` when it crossed
    RPC).
    """
    return exception_name in _REBUILDABLE_BURIALS


def is_outage(fault):
    """Whether a fault says a database or message bus outage buried it.

    Not the server's doing, and gone once the cloud fails over: a Galera
    writer killed while the conductor schedules a create or a rebuild's
    hand-off buries the server with ``DBConnectionError``.
    """
    return (fault.message or '') in _OUTAGES


def is_scheduling_failure(fault):
    """Whether a fault says the server found no valid host."""
    message = fault.message or ''
    for failure in _SCHEDULING_FAILURES:
        prefix = failure.msg_fmt.split('%(', 1)[0].strip()
        if message.startswith(prefix):
            return True
    return False


@dataclasses.dataclass
class PreparedRebuild(object):
    """A rebuild body validated and resolved as Nova's rebuild would.

    :ivar updates: Instance fields to set on the rebuilt server.
    :ivar image_id: the image to build from ('' never: volume-backed
        servers keep their volume's image).
    :ivar image: the image as Glance describes it.
    :ivar image_changed: whether the image differs from the original one.
    :ivar admin_password: the password compute sets (given or generated).
    :ivar is_volume_backed: whether the server boots from a volume.
    """

    updates: ty.Dict[str, ty.Any]
    image_id: str
    image: ty.Dict[str, ty.Any]
    image_changed: bool
    admin_password: str
    is_volume_backed: bool


def _translate(rebuild):
    """The instance fields a rebuild body asks for, as Nova names them."""
    body = dict(rebuild)
    kwargs = {}
    helpers.translate_attributes(helpers.REBUILD, body, kwargs)
    kwargs.pop('preserve_ephemeral', None)   # nothing was ever built
    for key, field in (('key_name', 'key_name'),
                       ('user_data', 'user_data'),
                       ('trusted_image_certificates', 'trusted_certs'),
                       ('hostname', 'hostname'),
                       ('description', 'display_description'),
                       ('metadata', 'metadata')):
        if key in body:
            kwargs[field] = body[key]
    if 'name' in body:
        kwargs['display_name'] = common.normalize_name(body['name'])
    return kwargs


def _keypair_updates(context, key_name):
    if not key_name:
        return {'key_name': None, 'key_data': None,
                'keypairs': nova_objects.KeyPairList(objects=[])}
    # Like Nova: keys belong to users, so the caller's key is used.
    key_pair = nova_objects.KeyPair.get_by_name(context, context.user_id,
                                                key_name)
    return {'key_name': key_pair.name, 'key_data': key_pair.public_key,
            'keypairs': nova_objects.KeyPairList(objects=[key_pair])}


def _volume_image_id(context, root_bdm):
    """The image a volume-backed server's root disk holds or is made from.

    A root volume that Nova's compute creates (from an image or a volume
    snapshot) does not exist yet for a server that never reached a
    compute: its BDM names the image, or the snapshot whose volume holds
    one.
    """
    if root_bdm is None:
        raise nova_exception.NovaException(
            _('Unable to find root block device mapping for volume-backed '
              'instance.'))
    volume_api = _compute_api().volume_api
    volume_id = root_bdm.volume_id
    if not volume_id and root_bdm.image_id:
        return root_bdm.image_id
    if not volume_id and root_bdm.snapshot_id:
        volume_id = volume_api.get_snapshot(
            context, root_bdm.snapshot_id)['volume_id']
    volume = volume_api.get(context, volume_id)
    return volume.get('volume_image_metadata', {}).get('image_id')


def original_image(context, cell0, instance):
    """The image a cell0 server was created from; its volume's if it boots
    from a volume.
    """
    if instance.image_ref:
        return instance.image_ref
    bdms, _fault, _request_id = load_cell0_details(context, cell0,
                                                   instance.uuid)
    return _volume_image_id(
        context, compute_utils.get_root_bdm(context, instance, bdms))


def _unstorable(value):
    """Why a text cannot be stored in a cell database, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            reason = _unstorable(key) or _unstorable(item)
            if reason:
                return reason
        return None
    if not isinstance(value, str):
        return None
    if '\x00' in value:
        return _('it holds a NUL character')
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        return _('it is not valid Unicode (a lone surrogate)')
    return None


def _refuse_unstorable(kwargs):
    # Nova's schema takes these, but the cell database cannot store them:
    # found after the move, the server would be stuck in BUILD.
    for field, value in kwargs.items():
        reason = _unstorable(value)
        if reason:
            raise exception.RequestRefused(400, _(
                'Invalid input for %(field)s: %(reason)s.') % {
                    'field': field, 'reason': reason})


def _prepare(context, instance, bdms, rebuild):
    api = _compute_api()
    kwargs = _translate(rebuild)
    _refuse_unstorable(kwargs)
    updates = {}
    if 'key_name' in kwargs:
        updates.update(_keypair_updates(context, kwargs.pop('key_name')))
    trusted_certs = None
    if 'trusted_certs' in kwargs:
        trusted_certs = kwargs.pop('trusted_certs')
        updates['trusted_certs'] = api._retrieve_trusted_certs_object(
            context, trusted_certs, rebuild=True)
    image_href = rebuild['imageRef']
    image_id, image = api._get_image(context, image_href)
    auto_disk_config = kwargs.get('auto_disk_config')
    api._check_auto_disk_config(image=image,
                                auto_disk_config=auto_disk_config)
    api._check_image_arch(image=image)

    flavor = instance.get_flavor()
    root_bdm = compute_utils.get_root_bdm(context, instance, bdms)
    volume_backed = compute_utils.is_volume_backed_instance(
        context, instance, bdms)
    if volume_backed:
        if trusted_certs:
            raise nova_exception.CertificateValidationFailed(message=_(
                'Image certificate validation is not supported for '
                'volume-backed servers.'))
        original_image = _volume_image_id(context, root_bdm)
        if original_image != image_href:
            # Nothing was ever written to the volume, but it holds its
            # image: a different image is refused as Nova refuses it.
            raise nova_exception.ImageUnacceptable(
                image_id=image_href, reason=_(
                    'Unable to rebuild with a different image for a '
                    'volume-backed server.'))
    else:
        original_image = instance.image_ref

    min_compute = {}
    if nova_release.checks_take_min_compute():
        min_compute['min_comp_ver'] = (
            nova_objects.service.get_minimum_version_all_cells(
                context, ['nova-compute']))
    api._checks_for_create_and_rebuild(
        context, image_id, image, flavor, kwargs.get('metadata', {}), [],
        root_bdm, **min_compute)

    image_changed = original_image != image_href
    if image_changed:
        kernel_id, ramdisk_id = api._handle_kernel_and_ramdisk(
            context, None, None, image)
        system_metadata = {
            key: value for key, value in instance.system_metadata.items()
            if not key.startswith(nova_utils.SM_IMAGE_PROP_PREFIX)}
        system_metadata.update(
            nova_utils.get_system_metadata_from_image(image, flavor))
        system_metadata['image_base_image_ref'] = image_id
        updates.update(image_ref=image_href, kernel_id=kernel_id or '',
                       ramdisk_id=ramdisk_id or '',
                       system_metadata=system_metadata)
    updates.update(api._inherit_properties_from_image(image,
                                                      auto_disk_config))
    updates.update(kwargs)
    password = rebuild.get('adminPass') or nova_utils.generate_password()
    return PreparedRebuild(updates, image_id, image, image_changed,
                           password, volume_backed)


def prepare_rebuild(context, instance, bdms, rebuild):
    """Validate a rebuild body against the server as Nova's rebuild does.

    :param rebuild: the ``rebuild`` object of a body already validated
        against Nova's schema.
    :returns: PreparedRebuild.
    :raises: RequestRefused with the status and message Nova answers.
    """
    try:
        return _prepare(context, instance, bdms, rebuild)
    except nova_exception.ImageNotFound:
        raise exception.RequestRefused(
            400, _('Cannot find image for rebuild'))
    except nova_exception.KeypairNotFound:
        raise exception.RequestRefused(400, _('Invalid key_name provided.'))
    except nova_exception.OverQuota as exc:
        raise exception.RequestRefused(403, exc.format_message())
    except (nova_exception.AutoDiskConfigDisabledByImage,
            nova_exception.CertificateValidationFailed,
            nova_exception.ImageNotActive,
            nova_exception.ImageUnacceptable,
            nova_exception.InvalidMetadata,
            nova_exception.InvalidArchitectureName,
            nova_exception.InvalidVolume,
            ) + servers_api.INVALID_FLAVOR_IMAGE_EXCEPTIONS as exc:
        raise exception.RequestRefused(400, exc.format_message())
    except webob.exc.HTTPError as exc:
        raise exception.RequestRefused(exc.status_int, exc.explanation)
