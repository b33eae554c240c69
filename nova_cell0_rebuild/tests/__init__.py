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


"""Tests of nova-cell0-rebuild, mirroring the source tree.

:mod:`.unit` runs without Nova's services, :mod:`.functional` runs real
Nova in-process with the filter, :mod:`.cloud` drives a multi-process
OpenStack (``tox -e cloud``), :mod:`.nova_functional` runs a slice of Nova's
own functional tests through the filter and :mod:`.bench` holds the
benchmarks. Importing this package first keeps test output quiet
(:mod:`.quiet_output`); ``OS_DEBUG`` brings everything back.
"""

from nova_cell0_rebuild.tests import quiet_output

quiet_output.quiet_at_import()
