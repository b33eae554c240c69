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

"""Configuration options of nova-cell0-rebuild.

Options are registered on the ``ConfigOpts`` handed to :func:`register_opts`;
nothing here touches a global configuration object by itself.
"""

from nova_cell0_rebuild.conf import cell0_rebuild
from nova_cell0_rebuild.conf import cell0_rebuild_client
from nova_cell0_rebuild.conf import cell0_rebuild_pending


def register_opts(conf):
    """Register every option of the plugin on *conf*."""
    cell0_rebuild.register_opts(conf)
    cell0_rebuild_client.register_opts(conf)
    # nova-api reads the opt-in's options; the service reads them all.
    cell0_rebuild_pending.register_opts(conf)
