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

"""Nova's archive reflects each cell database once per world, not per call.

``nova.db.main.api.archive_deleted_rows`` reflects the whole schema of the
cell database (about 110 tables with their shadow copies) at every call,
and ``nova-manage db archive_deleted_rows --until-complete`` calls it until
a pass archives nothing: most of the time the explorer spends checking a
schedule with a DELETE went there. The explorer's schema never changes
between schedules (each one restores the same databases' rows), so the
first reflection of each engine is kept and handed to the later ones.
Nothing else of Nova's archive changes: it reads and moves the rows as
always.
"""

import types

import fixtures
import sqlalchemy as sa


class ReflectOnce(fixtures.Fixture):
    """Nova's archive module reflects each engine once while this lives.

    ``sa.MetaData().reflect(bind=engine)`` in nova.db.main.api hands out
    the first reflection of that engine.
    """

    _MODULE = 'nova.db.main.api'

    def _setUp(self):
        reflected = {}

        class MetaData(sa.MetaData):
            def reflect(self, bind=None, **kwargs):
                if kwargs or bind is None:
                    return super().reflect(bind=bind, **kwargs)
                first = reflected.get(bind)
                if first is None:
                    super().reflect(bind=bind)
                    reflected[bind] = self
                else:
                    # The same tables, columns and keys as the first time.
                    self.__dict__ = first.__dict__

        sqlalchemy = types.ModuleType('sqlalchemy')
        sqlalchemy.__dict__.update(vars(sa))
        sqlalchemy.MetaData = MetaData
        self.useFixture(fixtures.MonkeyPatch(self._MODULE + '.sa',
                                             sqlalchemy))
