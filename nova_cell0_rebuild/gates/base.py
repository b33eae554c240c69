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

"""What a gate is, and what it is shown."""

import abc
import dataclasses
import typing as ty

from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import objects


@dataclasses.dataclass
class Cell0Server(object):
    """A server buried in cell0, as the gates and the task see it.

    :ivar context: the caller's request context.
    :ivar instance: the cell0 Instance, with the fields a rebuild copies.
    :ivar mapping: its InstanceMapping (pointing at cell0).
    :ivar cell0: the cell0 CellMapping.
    :ivar record: its CreateRecord, or None when the create was never
        recorded.
    :ivar fault: the latest InstanceFault, or None.
    :ivar create_request_id: request id of its ``create`` instance action.
    :ivar read_only: gates must not write anything (listings, show).
    """

    context: ty.Any
    instance: ty.Any
    mapping: ty.Any
    cell0: ty.Any
    record: ty.Any = None
    fault: ty.Any = None
    create_request_id: ty.Optional[str] = None
    read_only: bool = False

    @property
    def uuid(self):
        return self.instance.uuid

    @classmethod
    def load(cls, context, instance, mapping, read_only=False):
        """What the gates look at, for a cell0 instance.

        :returns: (Cell0Server, the instance's BlockDeviceMappingList).
        """
        cell0 = mapping.cell_mapping
        bdms, fault, create_request_id = nova_compute.load_cell0_details(
            context, cell0, instance.uuid)
        try:
            record = objects.CreateRecord.get_for_instance(
                context, instance.uuid,
                reservation_id=instance.reservation_id,
                request_id=create_request_id)
        except exception.CreateRecordNotFound:
            record = None
        return cls(context=context, instance=instance, mapping=mapping,
                   cell0=cell0, record=record, fault=fault,
                   create_request_id=create_request_id,
                   read_only=read_only), bdms


class Gate(metaclass=abc.ABCMeta):
    """One eligibility check of a rebuild from cell0.

    A gate is loaded from the ``nova_cell0_rebuild.gates`` entry point
    namespace and constructed with the ConfigOpts in use. It must not change
    anything unless documented (the personality gate writes its marker).
    """

    #: The entry point name, used in refusals and logs.
    name = None

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def check(self, server, rebuild):
        """Refuse the rebuild by raising :meth:`refuse`, or return None.

        :param server: the :class:`Cell0Server`.
        :param rebuild: the validated ``rebuild`` object of the request body.
        """

    def refuse(self, status, message):
        """Raise the refusal of this gate."""
        raise exception.GateRefused(self.name, status, message)
