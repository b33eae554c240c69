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

"""The Nova internals the adapters call, and the releases they were checked on.

Nova's Python code is no public API: any release may rename or reshape what
the adapters call. Each entry below is one such call: its dotted path, and
for each parameter list it has had, the Nova major releases that have it.
The lists were read from Nova 29.4.0, 30.3.0, 31.3.1, 32.2.1, 33.0.2 and
34.0.0; where a call differs, :mod:`.nova_release` decides which one the
installed Nova has.

``tests/unit/adapters/test_nova_private_calls.py`` resolves each entry on the
installed Nova and checks that its parameters are the ones listed for that
release, so that a Nova upgrade fails a test instead of a user. Adding a
Nova release means checking each entry and adding its number here.

This module imports nothing: it is data.
"""

#: The Nova major releases every entry was checked on.
CHECKED_RELEASES = (29, 30, 31, 32, 33, 34)

_ALL = CHECKED_RELEASES

#: Functions and methods: path -> {parameters: Nova majors}. "*x"/"**x"
#: name variadic parameters; methods list self/cls as declared.
CALLS = {
    # nova_api: schemas, the servers controller and its view.
    'nova.api.validation.validators._SchemaValidator.__init__': {
        ('self', 'schema', 'relax_additional_properties', 'is_body'): _ALL},
    'nova.api.openstack.compute.servers.ServersController'
    '._get_requested_networks': {
        ('self', 'requested_networks'): _ALL},
    'nova.api.openstack.compute.servers.ServersController._get_server': {
        ('self', 'context', 'req', 'instance_uuid', 'is_detail',
         'cell_down_support', 'columns_to_join'): _ALL},
    'nova.api.openstack.compute.servers.ServersController._add_location': {
        ('robj',): _ALL},
    'nova.api.openstack.compute.views.servers.ViewBuilder.show': {
        ('self', 'request', 'instance', 'extend_address',
         'show_extra_specs', 'show_AZ', 'show_config_drive',
         'show_extended_attr', 'show_host_status', 'show_keypair',
         'show_srv_usg', 'show_sec_grp', 'show_extended_status',
         'show_extended_volumes', 'bdms', 'cell_down_support',
         'show_server_groups', 'show_user_data', 'provided_az'): (29, 30),
        ('self', 'request', 'instance', 'extend_address',
         'show_extra_specs', 'show_AZ', 'show_config_drive',
         'show_extended_attr', 'show_host_status', 'show_keypair',
         'show_srv_usg', 'show_sec_grp', 'show_extended_status',
         'show_extended_volumes', 'bdms', 'cell_down_support',
         'show_server_groups', 'show_user_data', 'provided_az',
         'provided_sched_hints'): (31, 32, 33, 34)},
    # nova_compute: Nova's own rebuild validation.
    'nova.compute.api.API._retrieve_trusted_certs_object': {
        ('context', 'trusted_certs', 'rebuild'): _ALL},
    'nova.compute.api.API._get_image': {
        ('self', 'context', 'image_href'): _ALL},
    'nova.compute.api.API._check_auto_disk_config': {
        ('self', 'instance', 'image', 'auto_disk_config'): _ALL},
    'nova.compute.api.API._check_image_arch': {
        ('self', 'image'): _ALL},
    'nova.compute.api.API._checks_for_create_and_rebuild': {
        ('self', 'context', 'image_id', 'image', 'flavor', 'metadata',
         'files_to_inject', 'root_bdm', 'validate_numa'): (29, 30),
        ('self', 'context', 'image_id', 'image', 'flavor', 'metadata',
         'files_to_inject', 'root_bdm', 'min_comp_ver',
         'validate_numa'): (31, 32, 33, 34)},
    'nova.compute.api.API._handle_kernel_and_ramdisk': {
        ('self', 'context', 'kernel_id', 'ramdisk_id', 'image'): _ALL},
    'nova.compute.api.API._inherit_properties_from_image': {
        ('self', 'image', 'auto_disk_config'): _ALL},
    'nova.objects.service.get_minimum_version_all_cells': {
        ('context', 'binaries', 'require_all'): _ALL},
    'nova.utils.get_system_metadata_from_image': {
        ('image_meta', 'flavor'): _ALL},
    # nova_quota: quota, as a create checks it.
    'nova.objects.quotas.Quotas.check_deltas': {
        ('cls', 'context', 'deltas', '*count_args', '**count_kwargs'): _ALL},
    'nova.limit.placement.enforce_num_instances_and_flavor': {
        ('context', 'project_id', 'flavor', 'is_bfvm', 'min_count',
         'max_count', 'enforcer', 'delta_updates'): (29, 30, 31, 32, 33)},
    'nova.limit.placement.enforce_num_instances_and_resources': {
        ('context', 'project_id', 'request_spec', 'min_count', 'max_count',
         'enforcer', 'delta_updates'): (34,)},
    # nova_request_specs: what a create derives for the scheduler.
    'nova.accelerator.cyborg.get_device_profile_request_groups': {
        ('context', 'dp_name', 'owner'): _ALL},
    'nova.pci.request.get_pci_requests_from_flavor': {
        ('flavor', 'affinity_policy'): _ALL},
    'nova.virt.hardware.get_pci_numa_policy_constraint': {
        ('flavor', 'image_meta'): _ALL},
    'nova.block_device.get_bdm_image_metadata': {
        ('context', 'image_api', 'volume_api', 'block_device_mapping',
         'legacy_bdm'): _ALL},
    # nova_build_requests: the cast.
    'nova.conductor.api.ComputeTaskAPI.schedule_and_build_instances': {
        ('self', 'context', 'build_requests', 'request_spec', 'image',
         'admin_password', 'injected_files', 'requested_networks',
         'block_device_mapping', 'tags'): _ALL},
    # nova_servers, nova_cell0_listing: cells and system metadata.
    'nova.context.load_cells': {(): _ALL},
    'nova.db.main.api.instance_system_metadata_update': {
        ('context', 'instance_uuid', 'metadata', 'delete'): _ALL},
    # nova_deleted_servers: what archive would remove, and placement.
    'nova.objects.instance_group.InstanceGroup.destroy_members_bulk': {
        ('cls', 'context', 'instance_uuids'): _ALL},
    'nova.objects.instance_mapping.InstanceMappingList.destroy_bulk': {
        ('cls', 'context', 'instance_uuids'): _ALL},
    # nova_build_requests: the move writes the BuildRequest as create()
    # does, its object updated only once the transaction committed (a
    # transaction retried on DBDeadlock). Read on Nova 34; Nova's
    # create() has called these two the same way since 2016 (Newton).
    'nova.objects.build_request.BuildRequest._create_in_db': {
        ('context', 'updates'): _ALL},
    'nova.objects.build_request.BuildRequest._from_db_object': {
        ('context', 'req', 'db_req'): _ALL},
    # nova_build_requests: the move saves the RequestSpec as save() does,
    # comparing the stored availability zone first.
    'nova.objects.request_spec.RequestSpec._get_by_instance_uuid_from_db': {
        ('context', 'instance_uuid'): _ALL},
    'nova.objects.request_spec.RequestSpec._get_update_primitives': {
        ('self',): _ALL},
    'nova.objects.request_spec.RequestSpec.destroy_bulk': {
        ('cls', 'context', 'instance_uuids'): _ALL},
    'nova.scheduler.client.report.report_client_singleton': {(): _ALL},
    # nova_deleted_servers, nova_dropped_hand_offs: force, and None when
    # placement cannot be reached (its safe_connect decorator).
    'nova.scheduler.client.report.SchedulerReportClient'
    '.delete_allocation_for_instance': {
        ('self', 'context', 'uuid', 'consumer_type', 'force'): _ALL},
    # nova_placement: the allocation candidate query of
    # nova.scheduler.manager.SchedulerManager.select_destinations, for a
    # buried server's request shape (issue 27). Read on Nova 29 and 34,
    # where each is the same; the stub of HostManager mirrors
    # get_compute_nodes_by_host_or_node, the one method the scheduler
    # hands resources_from_request_spec for.
    'nova.scheduler.request_filter.process_reqspec': {
        ('ctxt', 'request_spec'): _ALL},
    'nova.scheduler.utils.resources_from_request_spec': {
        ('ctxt', 'spec_obj', 'host_manager',
         'enable_pinning_translate'): _ALL},
    'nova.scheduler.utils.ResourceRequest.to_querystring': {
        ('self',): _ALL},
    'nova.scheduler.host_manager.HostManager'
    '.get_compute_nodes_by_host_or_node': {
        ('self', 'ctxt', 'host', 'node', 'cell'): _ALL},
    'nova.scheduler.client.report.SchedulerReportClient.get': {
        ('self', 'url', 'version', 'global_request_id'): _ALL},
    'nova.context.scatter_gather_cells': {
        ('context', 'cell_mappings', 'timeout', 'fn', '*args',
         '**kwargs'): _ALL},
    'nova.context.is_cell_failure_sentinel': {('record',): _ALL},
    # nova_paste, nova_service_context.
    'nova.api.openstack.wsgi_app._get_config_files': {('env',): _ALL},
    'nova.context._ContextAuthPlugin.__init__': {
        ('self', 'auth_token', 'sc'): _ALL},
}

#: Module and class attributes read or written: path -> Nova majors.
ATTRIBUTES = {
    'nova.policy._ENFORCER': _ALL,
    'nova.context.CELLS': _ALL,
    # nova_placement: the scheduler's placement microversion ('1.36' on
    # 29 to 34) and its cell timeout.
    'nova.scheduler.client.report.SAME_SUBTREE_VERSION': _ALL,
    'nova.context.CELL_TIMEOUT': _ALL,
    # Nova 33 and newer name the rebuild action _rebuild, and keep its
    # request schemas on it; Nova 32 keeps them on _action_rebuild; older
    # releases keep them in the validation.schema closures of
    # _action_rebuild (see nova_release.rebuild_request_schemas).
    'nova.api.openstack.compute.servers.ServersController._action_rebuild':
        (29, 30, 31, 32),
    'nova.api.openstack.compute.servers.ServersController._rebuild': (33, 34),
    # The controller's constructor sets _view_builder to an instance of it
    # (nova.api.openstack.wsgi.Controller); its show() is in CALLS.
    'nova.api.openstack.compute.servers.ServersController'
    '._view_builder_class': _ALL,
}
