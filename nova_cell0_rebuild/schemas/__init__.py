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

"""JSON-schemas of the plugin's own API, as data.

Nova's own schemas (the rebuild body) are Nova's: they are looked up in
Nova by :mod:`nova_cell0_rebuild.adapters.nova_api`, which also validates
these with Nova's validator, so that both answer with Nova's messages.
"""
