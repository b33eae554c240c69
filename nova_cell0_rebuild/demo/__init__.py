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

"""A one-command demo: pre-emptible servers on an in-process Nova.

It sits on top, beside :mod:`~nova_cell0_rebuild.cmd`: it calls the
package's public functions and its public fixture
(:mod:`nova_cell0_rebuild.fixture`), never its tests.

Importing this package does nothing. :mod:`.main`, the command, checks its
command line (:mod:`.command_line`) and takes its port (:mod:`.loopback`)
with the standard library only, then monkey-patches for Nova's eventlet
mode, and only then imports :mod:`.run` and the modules that need Nova and
eventlet (:mod:`.cloud`, :mod:`.sandbox`, :mod:`.reaper`, ...). Import those
only after patching, as Nova's own functional tests do.
"""
