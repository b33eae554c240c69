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

"""Adapter for Nova's API-database engine facade.

The plugin's tables live in the Nova API database by default, and its
writes join Nova's transactions there (a BuildRequest and the journal step
that records it commit together). That takes Nova's own facade, which
nova-api, the conductor and nova-manage configure from ``[api_database]``.
"""

from nova.db.api import api as nova_api_db


def context_manager():
    """Nova's engine facade of the API database (``[api_database]``)."""
    return nova_api_db.context_manager
