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

"""Adapter for Nova's configuration start-up, used by our command lines."""

from nova import config as nova_config

from nova_cell0_rebuild.adapters import nova_release


def parse_args(argv, prog):
    """Read Nova's configuration files, set up its databases and RPC.

    Our command lines read the same files as nova-manage
    (``--config-file``/``--config-dir``, default ``/etc/nova/nova.conf``).
    RPC is set up as nova-manage does: loading a CellMapping formats its
    transport URL, and casting to the conductor needs it.
    """
    if nova_release.parse_args_takes_prog():
        nova_config.parse_args(argv, prog=prog)
    else:
        nova_config.parse_args(argv)
