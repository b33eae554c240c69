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

"""The relay for CERN's Aardvark: Nova's burial in cell0 as Aardvark's events.

:mod:`.burials` reads Nova's ``compute_task.build_instances.error``
notification and judges the buried server with the gates, as the manage
command's listing does; :mod:`.aardvark_events` builds the events of either
Aardvark version; :mod:`.listener` wires both to oslo.messaging. Used only by
``nova-cell0-rebuild-aardvark-relay`` (:mod:`nova_cell0_rebuild.cmd`), never
by nova-api; it sits on top, beside :mod:`nova_cell0_rebuild.operations`,
and may import every layer below.
"""
