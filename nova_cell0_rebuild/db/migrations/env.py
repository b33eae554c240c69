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

from alembic import context

from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild.db import models

target_metadata = models.BASE.metadata


def include_object(object_, name, type_, reflected, compare_to):
    # Our tables may share the Nova API database: never look at Nova's.
    if type_ == 'table':
        return (name.startswith(models.TABLE_PREFIX) and
                name != migration.VERSION_TABLE)
    return True


def run_migrations_online():
    connection = context.config.attributes['connection']
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        version_table=migration.VERSION_TABLE,
        include_object=include_object,
        render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
