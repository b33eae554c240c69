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

import sys

from nova import config as nova_config

from nova_cell0_rebuild.adapters import nova_release


def parse_args(argv, prog):
    """Read Nova's configuration files, set up its databases and RPC.

    Our command lines read the same files as nova-manage
    (``--config-file``/``--config-dir``, default ``/etc/nova/nova.conf``).
    RPC is set up as nova-manage does: loading a CellMapping formats its
    transport URL, and casting to the conductor needs it.

    Before Nova 33, ``parse_args`` takes no ``prog``, and oslo.config names
    the program after ``sys.argv[0]``: in its messages (``prog heal: error:
    ...``) and in the ``<prog>.conf`` it looks for. Run as ``python -c`` or
    ``python -m`` that is not our name, so ``sys.argv[0]`` is ours while
    Nova's start-up reads it.
    """
    if nova_release.parse_args_takes_prog():
        nova_config.parse_args(argv, prog=prog)
        return
    argv0 = sys.argv[0] if sys.argv else None
    sys.argv[:1] = [prog]
    try:
        nova_config.parse_args(argv)
    finally:
        sys.argv[:1] = [] if argv0 is None else [argv0]
