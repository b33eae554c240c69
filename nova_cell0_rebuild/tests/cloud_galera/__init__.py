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

"""The real-cloud job on a MariaDB Galera cluster (``tox -e cloud-galera``).

Nova's databases on three Galera nodes behind HAProxy, as operators run
them (``tools/minicloud/galera.py``): the writer killed during a move,
and two nova-api writing through different nodes. Not part of ``tox -e
cloud``: these tests need the cluster, and fail without it.
"""
