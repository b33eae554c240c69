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

"""Adapter for Nova's quota: may the project hold a buried server now?

The ``quota`` gate asks it before a move, with the check and the message
Nova's create gives, for each way Nova counts: legacy counting, counting
from placement, and unified limits.
"""

from nova.compute import utils as compute_utils
from nova import exception as nova_exception
from nova.limit import placement as placement_limits
from nova.limit import utils as limit_utils
from nova import objects as nova_objects
from oslo_config import cfg

from nova_cell0_rebuild.adapters import nova_release

CONF = cfg.CONF


def quota_refusal(context, instance):
    """Why the project cannot hold this server now, or None.

    Nova's legacy quota counts a cell0 instance already (it scatter-gathers
    instances over every cell, cell0 included), so the check adds nothing;
    counted from placement (or with unified limits), its cores and RAM are
    not in use yet and are added, its instance is not. The message is the
    one Nova's create answers with.
    """
    flavor = instance.flavor
    try:
        if limit_utils.use_unified_limits():
            _enforce_unified_limits(context, instance)
        elif CONF.quota.count_usage_from_placement:
            nova_objects.Quotas.check_deltas(
                context, {'cores': flavor.vcpus, 'ram': flavor.memory_mb},
                instance.project_id, check_project_id=instance.project_id)
        else:
            return _legacy_quota_refusal(context, instance)
    except nova_exception.OverQuota as exc:
        return exc.format_message()
    return None


def _enforce_unified_limits(context, instance):
    """Nova's unified limits check of a create of this server.

    Placement does not count the buried server's resources yet; its
    mapping already counts it as a server.
    """
    if nova_release.unified_limits_count_request_spec():
        spec = nova_objects.RequestSpec.get_by_instance_uuid(
            context, instance.uuid)
        placement_limits.enforce_num_instances_and_resources(
            context, instance.project_id, spec, 1, 1,
            delta_updates={'servers': 0})
    else:
        placement_limits.enforce_num_instances_and_flavor(
            context, instance.project_id, instance.flavor,
            compute_utils.is_volume_backed_instance(context, instance), 1, 1,
            delta_updates={'servers': 0})


_COUNTED = ('instances', 'cores', 'ram')


def _legacy_quota_refusal(context, instance):
    """Nova's legacy check of a create that counts nothing more.

    What ``compute_utils.check_num_instances_quota(..., 0, 0,
    orig_num_req=1)`` does, as Nova's recheck after a create: the same
    statements, but its message would print each limit as the usage
    ("already used 395263 of 395263 ram"). Nova's count tells the usage,
    which includes the buried server: what is used beside it is the
    count minus the server.
    """
    flavor = instance.flavor
    project_id, user_id = instance.project_id, instance.user_id
    user_quotas = nova_objects.Quotas.get_all_by_project_and_user(
        context, project_id, user_id)
    if not any(resource in user_quotas for resource in _COUNTED):
        user_id = None
    try:
        nova_objects.Quotas.check_deltas(
            context, dict.fromkeys(_COUNTED, 0), project_id,
            user_id=user_id, check_project_id=project_id,
            check_user_id=user_id)
    except nova_exception.OverQuota as exc:
        overs = exc.kwargs['overs']
        limits, usages = exc.kwargs['quotas'], exc.kwargs['usages']
    else:
        return None
    requested = {'instances': 1, 'cores': flavor.vcpus,
                 'ram': flavor.memory_mb}

    def joined(values):
        return ', '.join(str(values[resource]) for resource in overs)
    return nova_exception.TooManyInstances(
        overs=', '.join(overs), req=joined(requested),
        used=joined({resource: usages[resource] - requested[resource]
                     for resource in overs}),
        allowed=joined(limits)).format_message()
