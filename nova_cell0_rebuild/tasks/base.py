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

"""The shape of a task, as in nova/conductor/tasks/base.py."""

import abc

from oslo_utils import excutils


class TaskBase(metaclass=abc.ABCMeta):
    """A unit of work that undoes what it did when it fails.

    ``execute()`` runs ``_execute()``; if that raises, ``rollback(ex)``
    runs and the original exception is re-raised.
    """

    def __init__(self, context, instance):
        self.context = context
        self.instance = instance

    def execute(self):
        try:
            return self._execute()
        except Exception as ex:
            with excutils.save_and_reraise_exception():
                self.rollback(ex)

    @abc.abstractmethod
    def _execute(self):
        """Do the work; called by execute()."""

    def rollback(self, ex):
        """Undo what _execute() did; the default has nothing to undo."""
