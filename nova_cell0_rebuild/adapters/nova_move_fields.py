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

"""What a move does with every field of the Nova objects it hands to Nova.

Data only: the adapters that build the BuildRequest, compare the cell0 row
and reset the RequestSpec read these tables, and a unit test holds them
against the installed Nova's objects. A field that an upgraded Nova adds,
and that these tables do not name, fails
tests/unit/adapters/test_nova_move_fields (it would otherwise be dropped
silently, or copied without anyone deciding it should be).
"""

#: Instance fields the new BuildRequest's instance takes from the cell0 row:
#: what the user asked for and what Nova's create API recorded.
INSTANCE_COPIED = frozenset([
    'access_ip_v4', 'access_ip_v6', 'architecture', 'auto_disk_config',
    'availability_zone', 'config_drive', 'default_ephemeral_device',
    'default_swap_device', 'device_metadata', 'disable_terminate',
    'display_description', 'display_name', 'ephemeral_gb',
    'ephemeral_key_uuid', 'flavor', 'hostname', 'image_ref',
    'instance_type_id', 'kernel_id', 'key_data', 'key_name', 'keypairs',
    'launch_index', 'locked', 'locked_by', 'memory_mb', 'metadata',
    'new_flavor', 'numa_topology', 'old_flavor', 'os_type', 'project_id',
    'ramdisk_id', 'reservation_id', 'root_device_name', 'root_gb',
    'shutdown_terminate', 'system_metadata', 'trusted_certs', 'user_data',
    'user_id', 'uuid', 'vcpus', 'vm_mode',
])
#: Instance fields the move sets afresh, as Nova's create sets them.
INSTANCE_REBUILT = {
    'vm_state': 'building again',
    'task_state': 'scheduling again',
    'power_state': 'nothing runs yet',
    'progress': 'nothing is built yet',
    'info_cache': 'empty: compute allocates the networks',
    'security_groups': "empty, as on Nova's BuildRequest; the requested "
                       'ones are in the RequestSpec',
    'tags': "a TagList on the BuildRequest, as Nova's create writes it",
    'pci_requests': "derived again from the flavor, image and ports, whose "
                    "request ids compute matches (resource_requests)",
}
#: Instance fields left out, and why.
INSTANCE_DROPPED = {
    'id': "the cell database gives the new row its own",
    'created_at': "kept as the BuildRequest's created_at, which the "
                  "conductor writes to the cell",
    'updated_at': 'written by the database',
    'deleted_at': 'the server is not deleted',
    'deleted': 'the server is not deleted',
    'cleaned': 'nothing was built to clean up',
    'hidden': 'set only by cross-cell resize, which never ran',
    'host': 'chosen by the scheduler',
    'node': 'chosen by the scheduler',
    'compute_id': 'chosen by the scheduler',
    'launched_on': 'set by the compute that builds it',
    'launched_at': 'set by the compute that builds it',
    'terminated_at': 'the server is not deleted',
    'cell_name': 'unused since cells v1',
    'fault': "the burial's fault stays in the server's history",
    'pci_devices': 'claimed by the compute that builds it',
    'services': "the host's, read from the database",
    'ec2_ids': 'made from the new row id',
    'migration_context': 'no migration ever ran',
    'vcpu_model': 'set by the compute that builds it',
    'resources': 'claimed by the compute that builds it',
}
#: BlockDeviceMapping fields not copied: database identity and the link to
#: the cell0 instance; everything else is what the create asked for.
BDM_DROPPED = {
    'id': "the cell database gives the new row its own",
    'instance': 'the BDM is written for the new instance',
    'created_at': 'written by the database',
    'updated_at': 'written by the database',
    'deleted_at': 'the BDM is not deleted',
    'deleted': 'the BDM is not deleted',
}
#: RequestSpec fields the move changes (reset_request_spec,
#: complete_request_spec); every other field is kept as the create stored
#: it (RequestSpec.fields minus these).
REQUEST_SPEC_RESET = {
    'num_instances': 'one server is built',
    'image': 'the image it is built from, possibly new',
    'retry': 'no host was tried for this build',
    'ignore_hosts': 'no host was tried for this build',
    'pci_requests': 'derived again, as the instance\'s',
    'requested_networks': 'from the create record; not stored by Nova',
    'requested_destination': "the create's host/node (2.74); not stored "
                             'by Nova',
    'requested_resources': "the request groups of the ports and of the "
                           "flavor's device profile; not stored by Nova",
    'network_metadata': 'derived from the ports; not stored by Nova',
    'request_level_params': 'derived from the ports; not stored by Nova',
}
#: RequestSpec fields kept as the create stored them.
REQUEST_SPEC_KEPT = frozenset([
    'availability_zone', 'flavor', 'force_hosts', 'force_nodes', 'id',
    'instance_group', 'instance_uuid', 'is_bfv', 'limits', 'numa_topology',
    'project_id', 'scheduler_hints', 'security_groups', 'user_id',
])
#: BuildRequest fields new_build_request sets; the others are the
#: database's.
BUILD_REQUEST_SET = frozenset([
    'instance', 'instance_uuid', 'project_id', 'block_device_mappings',
    'tags', 'created_at'])
BUILD_REQUEST_DATABASE = frozenset(['id', 'updated_at'])
