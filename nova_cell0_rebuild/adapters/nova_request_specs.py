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

"""What a create derives for the scheduler, derived again for a move.

A server moved out of cell0 is scheduled as a create of one server: its
stored RequestSpec is reset to that, the PCI and port resource requests
are made afresh from the flavor, image and ports (Nova does not store
them), and the image conductor hands to compute is computed as a create
computes it. Nothing here writes: :mod:`.nova_build_requests` saves the
RequestSpec with the BuildRequest.
"""

import dataclasses
import typing as ty

from nova.accelerator import cyborg
from nova import block_device
from nova import exception as nova_exception
from nova.image import glance
from nova.network import neutron
from nova import objects as nova_objects
from nova.pci import request as pci_request
from nova.virt import hardware
from nova.volume import cinder


def get_request_spec(context, instance_uuid):
    """The server's RequestSpec, or None if it has none."""
    try:
        return nova_objects.RequestSpec.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.RequestSpecNotFound:
        return None


def reset_request_spec(spec, image, resources):
    """Make a stored RequestSpec a fresh one-server create (not saved).

    Saved by :func:`.nova_build_requests.move_to_build_request`, then
    completed by :func:`complete_request_spec`.

    :param image: the image dict the server is built from.
    :param resources: ResourceRequests from :func:`resource_requests`.
    """
    spec.num_instances = 1
    spec.image = nova_objects.ImageMeta.from_dict(image)
    spec.pci_requests = resources.pci_requests
    spec.retry = None
    spec.ignore_hosts = None
    # force_hosts and force_nodes stay: they are the admin's az:host:node
    # of the create, which the create was scheduled with. Nova resets them
    # only for moves of a built server, and the save that follows here
    # would store the reset for good.
    return spec


@dataclasses.dataclass
class ResourceRequests(object):
    """What a create derives from the flavor, the image and the ports.

    :ivar pci_requests: InstancePCIRequests of the flavor and of each
        SR-IOV port.
    :ivar network_metadata: NetworkMetadata (physnets, tunneled) or None.
    :ivar port_groups: the RequestGroups of the ports (QoS minimum
        bandwidth or packet rate, accelerator ports) and of the flavor's
        Cyborg device profile.
    :ivar level_params: RequestLevelParams of the ports, or None.
    """

    pci_requests: ty.Any
    network_metadata: ty.Any
    port_groups: ty.List[ty.Any]
    level_params: ty.Any


def resource_requests(context, instance, image, networks):
    """Derive a server's PCI and port resource requests as a create does.

    As ``nova.compute.api.API._validate_and_build_base_options``: the PCI
    requests of the flavor, then one per SR-IOV port, with the NUMA
    affinity policy of the flavor and image. Each port's new request id is
    set on its NetworkRequest, and the instance and RequestSpec must carry
    the same ids: compute binds a port to the device claimed for its
    request id. The ids stored at the create are not reused; the requests
    are made afresh, as for the create.

    :param instance: the server (its flavor and uuid).
    :param image: the image dict the server is built from.
    :param networks: NetworkRequestList or None; its requests get their
        ``pci_request_id``.
    :raises: DeviceProfileError when Cyborg does not know the flavor's
        device profile any more.
    """
    flavor = instance.flavor
    policy = hardware.get_pci_numa_policy_constraint(
        flavor, nova_objects.ImageMeta.from_dict(image))
    pci_requests = pci_request.get_pci_requests_from_flavor(
        flavor, affinity_policy=policy)
    network_metadata, port_groups, level_params = (
        neutron.API().create_resource_requests(
            context, networks, pci_requests, affinity_policy=policy))
    groups = list(port_groups or [])
    device_profile = flavor.extra_specs.get('accel:device_profile')
    if device_profile:
        # The conductor binds the accelerator requests it creates from the
        # profile to the providers allocated for these groups.
        groups += cyborg.get_device_profile_request_groups(
            context, device_profile)
    return ResourceRequests(pci_requests, network_metadata, groups,
                            level_params)


def complete_request_spec(spec, networks, resources, host=None, node=None):
    """Add what Nova does not store in a RequestSpec, as a create does.

    :param spec: the saved RequestSpec.
    :param networks: NetworkRequestList or None.
    :param resources: the ResourceRequests the server was moved with.
    :param host: the host the create asked for (2.74), which Nova does not
        keep in the RequestSpec it stores; with *node*, its node.
    """
    spec.requested_networks = (
        networks or nova_objects.NetworkRequestList(objects=[]))
    spec.requested_destination = None
    if host or node:
        # As the create API builds it (nova.compute.api._provision...).
        destination = nova_objects.Destination(node=node)
        if host:
            destination.host = host
        spec.requested_destination = destination
    # Not persisted by Nova: recomputed from the ports as a create does.
    spec.requested_resources = list(resources.port_groups)
    if resources.network_metadata is not None:
        spec.network_metadata = resources.network_metadata
    if resources.level_params is not None:
        spec.request_level_params = resources.level_params
    return spec


def image_for_build(context, bdms, prepared):
    """The image dict conductor hands to compute, as a create computes it.

    For a volume-backed server that is its root BDM's: its volume's image
    metadata, or the image its volume is to be created from.
    """
    if not prepared.is_volume_backed:
        return prepared.image
    return block_device.get_bdm_image_metadata(
        context, glance.API(), cinder.API(), bdms, legacy_bdm=False)
