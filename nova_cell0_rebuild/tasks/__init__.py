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

"""Tasks: the move of a server out of cell0, and healing an interrupted one.

Modelled on Nova's conductor tasks (:mod:`.base`): :mod:`.rebuild_from_cell0`
moves one server back into Nova's create pipeline, journaled step by step;
:mod:`.heal` finishes or undoes a move a crash interrupted;
:mod:`.server_history` keeps a moved server's instance actions. Tasks are
built by :mod:`nova_cell0_rebuild.api` (and the command lines) and may
import :mod:`~nova_cell0_rebuild.objects`, :mod:`~nova_cell0_rebuild.db`
and the adapters (and Nova's task-state names), never the API layer above
them.
"""
