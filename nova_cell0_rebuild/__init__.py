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

"""nova-cell0-rebuild: rebuild servers buried in cell0, keeping their UUID.

A paste filter for nova-api (:mod:`.api.filter`) records each server create
and answers a rebuild of a server in cell0 by sending it through Nova's
create pipeline again. The packages are layered, each importing only those
below it: :mod:`.api` (the filter and its requests), :mod:`.tasks` (the
move out of cell0 and its healing), :mod:`.gates` (who may be rebuilt),
:mod:`.objects` (versioned objects), :mod:`.db` (tables and migrations).
Beside them, :mod:`.conf`, :mod:`.policies` and :mod:`.notifications` serve
any layer, and :mod:`.adapters` holds the calls into Nova's Python
internals. :mod:`.cmd`, :mod:`.operations` and :mod:`.demo` sit on top;
:mod:`.fixture` is the public test fixture for deployments' own tests.
"""
