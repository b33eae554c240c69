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

"""Which servers have a create record, for many servers at once.

:meth:`CreateRecord.get_for_instance` finds the record of one server by its
uuid, its reservation id or the request id of its ``create`` action; this
answers the same question for a batch of each, one indexed query per key.
"""

from nova_cell0_rebuild.db import api as db_api
from nova_cell0_rebuild.db import models

_KEY_COLUMNS = ('instance_uuid', 'reservation_id', 'request_id')


def _recorded(context, column_name, values):
    values = sorted({value for value in values if value is not None})
    if not values:
        return set()
    column = getattr(models.CreateRecord, column_name)
    with db_api.reader(context) as session:
        rows = session.query(column).filter(column.in_(values)).all()
    return {row[0] for row in rows}


def recorded(context, instance_uuids=(), reservation_ids=(),
             request_ids=()):
    """The given keys that some create record carries.

    :returns: {'instance_uuid': set, 'reservation_id': set,
        'request_id': set}
    """
    asked = dict(zip(_KEY_COLUMNS,
                     (instance_uuids, reservation_ids, request_ids)))
    return {column: _recorded(context, column, values)
            for column, values in asked.items()}
