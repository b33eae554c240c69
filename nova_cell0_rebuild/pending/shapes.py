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

"""The request shape of a buried server: what placement is asked for it.

Computed as the move completes the RequestSpec it hands the scheduler
(``tasks/rebuild_from_cell0.py``), from the server's own image, so that
the question the dispatcher asks placement is the scheduler's. It calls
Neutron, Cyborg and the API database: done at intake, after an attempt
and when older than ``shape_ttl_seconds``, never per pass.
"""

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.adapters import nova_placement
from nova_cell0_rebuild.adapters import nova_request_specs
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.gates import base as gates_base


def compute(context, instance_uuid):
    """The query string(s) of a server still in cell0.

    :param context: the dispatcher's admin context.
    :returns: a tuple of query strings, or None when the server is no
        longer in cell0 (deleted, or moved out).
    :raises: NoCandidatePossible when no host could ever be asked for it
        (a request filter refuses it, no RequestSpec); RequestRefused when
        its image cannot be used (Nova's answer to a rebuild).
    """
    mapping = nova_servers.get_mapping(context, instance_uuid)
    if (mapping is None or mapping.queued_for_delete
            or not nova_servers.is_cell0(mapping.cell_mapping)):
        return None
    instance = nova_compute.get_server_in_cell(context, mapping)
    server, bdms = gates_base.Cell0Server.load(context, instance, mapping,
                                               read_only=True)
    image_ref = nova_compute.original_image(context, mapping.cell_mapping,
                                            instance)
    prepared = nova_compute.prepare_rebuild(context, instance, bdms,
                                            {'imageRef': image_ref})
    image = nova_request_specs.image_for_build(context, bdms, prepared)
    record = server.record
    networks = nova_api.requested_networks(
        record.requested_networks if record else None)
    spec = nova_placement.completed_request_spec(
        context, instance, image, networks,
        requested_host=record.requested_host if record else None,
        requested_node=(record.requested_hypervisor_hostname
                        if record else None))
    if spec is None:
        raise exception.NoCandidatePossible(
            reason='the server has no RequestSpec')
    return nova_placement.request_shape(context, spec)
