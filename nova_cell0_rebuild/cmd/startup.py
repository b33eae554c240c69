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

"""What both command lines do before their command runs.

They read Nova's configuration files through Nova's own start-up
(:mod:`nova_cell0_rebuild.adapters.nova_config`), which hands oslo.config
Nova's version for ``--version``: ours is answered here, before Nova's
start-up runs. A configuration file that cannot be read is an error of one
line naming the file, not oslo.config's traceback.
"""

import contextlib
import io
import signal
import sys
import threading

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_config
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import objects
from nova_cell0_rebuild import version

#: Errors in the files themselves: each names the file.
_FILE_ERRORS = (cfg.ConfigFileParseError, cfg.ConfigFilesPermissionDeniedError,
                cfg.ConfigSourceValueError, cfg.RequiredOptError)
#: Files or directories named on the command line that do not exist.
_MISSING = (cfg.ConfigFilesNotFoundError, cfg.ConfigDirNotFoundError)


LOG = logging.getLogger(__name__)

#: Where oslo.config looks for ``nova.conf`` and ``<prog>.conf`` when no
#: ``--config-file`` is given (as cfg.find_config_files documents it).
DEFAULT_CONFIG_DIRS = ('~/.nova/', '~/', '/etc/nova/', '/etc/')


class ConfigurationError(Exception):
    """Nova's configuration files cannot be read; the message is one line.

    :ivar missing: True when a file or directory the command line names
        does not exist: a usage error.
    """

    def __init__(self, message, missing=False):
        super().__init__(message)
        self.missing = missing


def one_line(exc):
    """The first line of an exception's message, or its class name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def version_asked(argv, commands):
    """Whether ``--version`` comes before the command, where argparse reads it.

    :param commands: the words that start a command (``db``, ``list``...).
    """
    for word in argv[1:]:
        if word in commands:
            return False
        if word == '--version':
            return True
    return False


def help_asked(argv, commands):
    """Whether ``-h`` or ``--help`` comes before the command.

    :param commands: as :func:`version_asked`.
    """
    for word in argv[1:]:
        if word in commands:
            return False
        if word in ('-h', '--help'):
            return True
    return False


def _with_description(text, description):
    """oslo.config's help with *description* after its usage, as argparse.

    Nova's start-up gives oslo.config no description, so its ``--help``
    would not say what the command does.
    """
    usage, sep, rest = text.partition('\n\n')
    return '%s\n\n%s\n\n%s' % (usage, description.strip(), rest)


def _file_being_read(exc):
    """The configuration file oslo.config was reading when exc was raised."""
    found, frame = None, exc.__traceback__
    while frame is not None:
        found = frame.tb_frame.f_locals.get('config_file', found)
        frame = frame.tb_next
    return found


def parse_args(argv, prog, commands, description=None):
    """Print our version if asked, else read Nova's configuration files.

    :param commands: as :func:`version_asked`.
    :param description: what the command does, for its ``--help``.
    :raises: SystemExit(0) once the version or the help is printed, as
        argparse does; ConfigurationError.
    """
    if version_asked(argv, commands):
        print(version.release_string())
        raise SystemExit(0)
    if description and help_asked(argv, commands):
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                nova_config.parse_args(argv, prog=prog)
        finally:
            sys.stdout.write(_with_description(text.getvalue(), description))
            sys.stdout.flush()
    try:
        nova_config.parse_args(argv, prog=prog)
    except _MISSING as exc:
        raise ConfigurationError(one_line(exc), missing=True)
    except _FILE_ERRORS as exc:
        raise ConfigurationError(one_line(exc))
    except UnicodeDecodeError as exc:
        # oslo.config lets it through without saying which file it read.
        raise ConfigurationError('Failed to parse %s: not UTF-8 text (%s)' % (
            _file_being_read(exc) or 'a configuration file', exc.reason))


#: What a database that cannot be reached or read raises: a command says
#: so in one line (:func:`one_line`) instead of a traceback.
DB_ERRORS = (db_exc.DBError, db_exc.CantStartEngineError,
             sa.exc.SQLAlchemyError)


def start_service(argv, prog, description):
    """What a long-running command of ours does before its own start:
    read Nova's configuration files, log as Nova's services do, register
    Nova's objects and ours.

    :raises: SystemExit and ConfigurationError, as :func:`parse_args`.
    """
    parse_args(argv, prog, set(), description=description)
    logging.setup(cfg.CONF, 'nova')
    nova_servers.register_nova_objects()
    objects.register_all()


def stop_on_signals(stopping=None):
    """Set *stopping* (a new Event if None) on SIGTERM or SIGINT.

    :returns: the event, which a service's main thread waits on with a
        timeout, so that it runs the signal handlers.
    """
    stopping = stopping or threading.Event()

    def _stop(signum, _frame):
        LOG.info('Signal %s received: stopping', signum)
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)
    return stopping


def missing_option(conf, prog, options):
    """Which option the command needs is unset, and where it was looked for.

    :param options: (group, name) pairs, any one of which is enough.
    :returns: None when one is set, else one line naming the options and
        the files that were read, or, when none was found, where oslo.config
        looked for them.
    """
    if any(conf[group][name] for group, name in options):
        return None
    names = ' or '.join('[%s] %s' % option for option in options)
    read = list(conf.config_file or []) + list(conf.config_dir or [])
    if read:
        return '%s is not set in %s' % (names, ', '.join(read))
    return ('%s is not set: no configuration file was found (looked for '
            'nova.conf and %s.conf in %s); give one with --config-file'
            % (names, prog, ', '.join(DEFAULT_CONFIG_DIRS)))
