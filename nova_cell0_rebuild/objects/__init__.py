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

"""Versioned objects of nova-cell0-rebuild.

Registered classes are published here as attributes, e.g.
``nova_cell0_rebuild.objects.CreateRecord``.
"""


def register_all():
    # Importing a module registers the objects it defines.
    __import__('nova_cell0_rebuild.objects.cell0_wait')
    __import__('nova_cell0_rebuild.objects.create_record')
    __import__('nova_cell0_rebuild.objects.move_journal')
    __import__('nova_cell0_rebuild.objects.pending_epoch')
    __import__('nova_cell0_rebuild.objects.relay_announcement')
    __import__('nova_cell0_rebuild.objects.server_history')
