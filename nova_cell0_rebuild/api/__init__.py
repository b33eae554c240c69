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

"""The nova-api side: the ``cell0_rebuild`` paste filter and what it answers.

:mod:`.filter` routes the requests it handles (server creates, rebuild
actions, deletes, instance-action listings) and passes everything else to
Nova untouched; :mod:`.create_capture` and :mod:`.record_keeping` keep the
create records, :mod:`.rebuild` answers a rebuild from cell0 (refused for
the server's state or a race with the answers of :mod:`.rebuild_refusals`),
and :mod:`.pipeline_position` checks where the filter sits in
api-paste.ini.
The top layer of a request: it may import :mod:`~nova_cell0_rebuild.tasks`,
:mod:`~nova_cell0_rebuild.gates`, :mod:`~nova_cell0_rebuild.objects`, the
adapters, configuration, policies and notifications; nothing below imports
it, except :mod:`~nova_cell0_rebuild.operations` and the command lines.
"""
