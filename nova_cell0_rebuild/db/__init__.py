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

"""The plugin's tables: models, engine facade and alembic migrations.

:mod:`.models` declares the ``cell0_rebuild_*`` tables, :mod:`.api` gives
the transactions on them (Nova's API-database facade by default, or a
database of their own with ``[cell0_rebuild] connection``), and
:mod:`.migration` with ``migrations/`` runs their alembic history under its
own version table. The bottom layer: it imports nothing else of the plugin
(its one Nova import is the API-database facade it shares). Read through
:mod:`~nova_cell0_rebuild.objects`; the move task (for its transactions),
purge, the command lines and the public fixture use it directly.
"""
