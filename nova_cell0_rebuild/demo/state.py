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

"""Where ``--serve`` keeps its databases, and the file that names them.

The scenario alone keeps Nova's databases in memory. A served sandbox keeps
them in SQLite files instead (the API database, which also holds the
plugin's tables, cell0 and cell1), so that ``nova-cell0-rebuild-manage``
and ``nova-cell0-rebuild-status``, other processes, read and write the
same rows the sandbox's Nova does, through the configuration file
:func:`write_config` writes.

The files are in WAL mode: a reader in one process and a writer in the
other do not wait for each other, and two writers wait (up to SQLite's
busy timeout, five seconds in Python) instead of failing at once.

Standard library only: the directory is checked, like the port, before
Nova is imported.
"""

import os
import sqlite3
import tempfile

#: The databases, by the name the demo gives them.
DATABASES = ('api', 'cell0', 'cell1')
#: The configuration file the CLIs are given, in the state directory.
CONFIG_NAME = 'nova-cell0-rebuild.conf'
_PREFIX = 'nova-cell0-rebuild-demo-'


class StateDirectoryError(ValueError):
    """The state directory cannot hold a new sandbox."""


class SandboxState(object):
    """The sandbox's directory, its database files and configuration file.

    :ivar directory: an absolute path.
    :ivar temporary: True when the demo made the directory (and removes it
        when it stops); False for a ``--state-dir`` of the user's.
    """

    def __init__(self, directory, temporary):
        self.directory = os.path.abspath(directory)
        self.temporary = temporary

    def path(self, database):
        """The file of one of :data:`DATABASES`."""
        return os.path.join(self.directory, '%s.sqlite' % database)

    def url(self, database):
        """The SQLAlchemy URL of one of :data:`DATABASES`."""
        return 'sqlite:///%s' % self.path(database)

    @property
    def config_file(self):
        return os.path.join(self.directory, CONFIG_NAME)

    def create_databases(self):
        """Create the empty database files, in WAL mode.

        WAL is a property of the file: every connection of either process
        opens it in WAL mode.
        """
        for database in DATABASES:
            with sqlite3.connect(self.path(database)) as connection:
                connection.execute('PRAGMA journal_mode=WAL')
            connection.close()

    def remove(self):
        """Remove what the demo wrote; the directory too if it made it."""
        for name in self._files():
            try:
                os.unlink(os.path.join(self.directory, name))
            except FileNotFoundError:
                pass
        if self.temporary:
            try:
                os.rmdir(self.directory)
            except OSError:
                pass

    def _files(self):
        names = [CONFIG_NAME]
        for database in DATABASES:
            base = '%s.sqlite' % database
            names.extend([base, base + '-wal', base + '-shm'])
        return names

    def leftovers(self):
        """The files of an earlier sandbox already in the directory."""
        return [name for name in self._files()
                if os.path.exists(os.path.join(self.directory, name))]


def prepare(directory=None, tmpdir=None):
    """The sandbox's state directory: *directory*, or a new temporary one.

    A given directory is created if missing; it must not hold the files of
    another sandbox (each run builds a new cloud, and two sandboxes on the
    same files would corrupt each other's Nova).

    :raises: StateDirectoryError, with a message for the command line.
    """
    if directory is None:
        return SandboxState(tempfile.mkdtemp(prefix=_PREFIX, dir=tmpdir),
                            temporary=True)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise StateDirectoryError('cannot create %s: %s'
                                  % (directory, exc.strerror or exc))
    state = SandboxState(directory, temporary=False)
    leftovers = state.leftovers()
    if leftovers:
        raise StateDirectoryError(
            '%s already holds a sandbox (%s): remove those files or give '
            'another directory' % (state.directory, ', '.join(leftovers)))
    if not os.access(state.directory, os.W_OK | os.X_OK):
        raise StateDirectoryError('%s is not writable' % state.directory)
    return state


CONFIG = """\
# Written by nova-cell0-rebuild-demo for its sandbox: Nova's databases
# are the files next to this one while the demo serves.
#   nova-cell0-rebuild-manage --config-file %(conf)s list
#   nova-cell0-rebuild-status --config-file %(conf)s upgrade check
[DEFAULT]
# The sandbox's message bus is in the demo's process: nothing to reach.
transport_url = fake://

[api_database]
# Also holds the plugin's tables ([cell0_rebuild] connection is unset, as
# in a deployment that keeps them with Nova's).
connection = %(api)s

[database]
connection = %(cell1)s

[wsgi]
# The paste file the sandbox's nova-api runs, for the status check.
api_paste_config = %(paste)s

[cell0_rebuild]
%(plugin)s"""


def write_config(state, paste_file, plugin_options):
    """Write the configuration file the CLIs take; returns its path.

    :param paste_file: the api-paste.ini of the sandbox's nova-api.
    :param plugin_options: ``[cell0_rebuild]`` options the demo set, so
        that the CLIs judge servers as its nova-api does.
    """
    plugin = ''.join('%s = %s\n' % (name, value)
                     for name, value in sorted(plugin_options.items()))
    text = CONFIG % {'conf': state.config_file, 'api': state.url('api'),
                     'cell1': state.url('cell1'), 'paste': paste_file,
                     'plugin': plugin}
    with open(state.config_file, 'w') as config:
        config.write(text)
    return state.config_file
