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

"""Nova's ``compute_task.build_instances.error``, built by Nova's own code.

The payload is made by Nova's notification objects
(``ComputeTaskPayload`` from a RequestSpec and the exception, as
``nova.compute.utils.notify_about_compute_task_error`` makes it), so its
shape is the installed Nova's, whatever the release.
"""

import sys

import fixtures
from nova.compute import utils as compute_utils
from nova import exception as nova_exception
from nova.notifications.objects import compute_task
from nova import objects as nova_objects
from nova import rpc as nova_rpc
from oslo_config import cfg
from oslo_messaging._drivers import common as rpc_common

EVENT_TYPE = 'compute_task.build_instances.error'
PUBLISHER_ID = 'nova-conductor:conductor-host'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'


def received_over_rpc(error):
    """*error* as the caller of an RPC call receives it from the server.

    The serialization every real oslo.messaging driver applies to a
    failure (the fake driver does not: it passes the original through),
    with the exception modules Nova allows: a NovaException comes back as
    a subclass named ``<name>_Remote``. The functional test
    ``test_aardvark_relay`` has the same from a real RabbitMQ.
    """
    try:
        raise error
    except Exception:
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    return rpc_common.deserialize_remote_exception(
        data, nova_rpc.get_allowed_exmods())


def flavor(**sizes):
    values = dict(id=1, flavorid='42', name='preemptible.small',
                  memory_mb=512, vcpus=1, root_gb=1, ephemeral_gb=0, swap=0,
                  rxtx_factor=1.0, is_public=True, disabled=False,
                  extra_specs={}, projects=[], description=None)
    values.update(sizes)
    return nova_objects.Flavor(**values)


def request_spec(instance_uuid, project_id, aggregates=None, **sizes):
    destination = None
    if aggregates is not None:
        destination = nova_objects.Destination(host='node1', node=None,
                                               cell=None,
                                               aggregates=aggregates)
    return nova_objects.RequestSpec(
        instance_uuid=instance_uuid, project_id=project_id,
        user_id='user', flavor=flavor(**sizes),
        image=nova_objects.ImageMeta.from_dict({'id': IMAGE,
                                                'properties': {}}),
        num_instances=1, requested_destination=destination,
        availability_zone=None, ignore_hosts=None, force_hosts=None,
        force_nodes=None, scheduler_hints={},
        security_groups=nova_objects.SecurityGroupList(objects=[]),
        instance_group=None, numa_topology=None, pci_requests=None,
        retry=None)


class NovaNotices(fixtures.Fixture):
    """Lets Nova's payload objects fill themselves in, outside a service.

    Nova's payloads copy their fields only when versioned notifications
    are enabled (``nova.rpc.if_notifications_enabled``).
    """

    def _setUp(self):
        nova_objects.register_all()
        self.useFixture(fixtures.MockPatch('nova.rpc.NOTIFIER'))
        conf = cfg.CONF
        conf.set_override('notification_format', 'versioned',
                          group='notifications')
        self.addCleanup(conf.clear_override, 'notification_format',
                        group='notifications')

    def build_instances_error(self, instance_uuid, project_id='project',
                              error=None, spec=None, **spec_kwargs):
        """The payload primitive Nova sends when it buries a server.

        :param error: the exception (default: NoValidHost).
        """
        spec = spec or request_spec(instance_uuid, project_id,
                                    **spec_kwargs)
        error = error or nova_exception.NoValidHost(
            reason='There are not enough hosts available.')
        try:
            raise error
        except Exception as raised:
            fault, _priority = (compute_utils.
                                _get_fault_and_priority_from_exception(
                                    raised))
        payload = compute_task.ComputeTaskPayload(
            instance_uuid=instance_uuid, request_spec=spec, state='error',
            reason=fault)
        return payload.obj_to_primitive()
