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

"""Query strings of the rebuildability API (``/os-cell0-rebuild/servers``).

As Nova's query schemas are written (``nova.api.validation``): the query is
``{name: [values]}``, each parameter takes one value (``single_param``), and
a parameter the schema does not name is refused. The types are Nova's
(``nova.api.validation.parameter_types``), copied as data so that this
module imports nothing of Nova's.
"""


def _single_param(schema):
    """A query parameter given at most once (Nova's ``single_param``)."""
    return {'type': 'array', 'items': schema, 'maxItems': 1}


#: Nova's ``non_negative_integer``: ASCII digits only, so that what the
#: schema takes, ``int()`` reads ('²' is a digit to ``str.isdigit``).
_NON_NEGATIVE_INTEGER = {
    'type': ['integer', 'string'],
    'pattern': '^[0-9]*$',
    'minimum': 0,
    'minLength': 1,
}

#: Nova's ``project_id``.
_PROJECT_ID = {
    'type': 'string',
    'pattern': '^[a-zA-Z0-9-]*$',
    'minLength': 1,
    'maxLength': 255,
}

#: What ``oslo_utils.strutils.bool_from_string(strict=True)`` reads, in any
#: case, and the empty value of ``?all_projects`` alone (as Nova's
#: ``all_tenants``), which is true.
_BOOLEAN = {
    'type': 'string',
    'pattern': '^(?i:|1|t|true|on|y|yes|0|f|false|off|n|no)$',
}

#: ``GET /os-cell0-rebuild/servers``.
index_query = {
    'type': 'object',
    'properties': {
        'limit': _single_param(_NON_NEGATIVE_INTEGER),
        'marker': _single_param({'type': 'string'}),
        'all_projects': _single_param(_BOOLEAN),
        'project_id': _single_param(_PROJECT_ID),
    },
    'additionalProperties': False,
}

#: ``GET /os-cell0-rebuild/servers/{server_id}``: no parameter.
show_query = {
    'type': 'object',
    'properties': {},
    'additionalProperties': False,
}
