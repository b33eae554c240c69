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

"""Request bodies of ``/os-cell0-rebuild/servers/{server_id}/wait``.

Written as Nova's body schemas are; the deadline's grammar is checked
after the schema, by :mod:`nova_cell0_rebuild.pending.deadline`, whose
message says what it takes.
"""

#: ``PUT .../wait``: ``{"wait": {"deadline": "6h"}}``.
put_body = {
    'type': 'object',
    'properties': {
        'wait': {
            'type': 'object',
            'properties': {
                'deadline': {
                    'type': 'string', 'minLength': 1, 'maxLength': 255,
                },
            },
            'required': ['deadline'],
            'additionalProperties': False,
        },
    },
    'required': ['wait'],
    'additionalProperties': False,
}
