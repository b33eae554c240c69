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

"""nova-cell0-rebuild-manage: operator commands.

Reads the same configuration files as nova-manage (``--config-file``,
``--config-dir``; default ``/etc/nova/nova.conf``).

Exit codes: 0 success; 1 error (printed as one line on stderr, an
unreadable configuration file or an unset database option among them); 2
usage, before any database is read (an argument :mod:`.arguments` or
``purge --before`` refuses, a missing configuration file); 3 something
needs an operator's attention (``heal`` left a move alone, ``rebuild`` was
refused: the refusal is printed); 4 the server is not found (``show``:
nothing of it is known, ``rebuild``: it does not exist or was deleted); 5
the plugin's tables do not exist or are behind this code: run ``db sync``.
"""

import json
import logging as std_logging
import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import timeutils
import prettytable

from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.adapters import nova_service_context
from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.api import rebuild as rebuild_flow
from nova_cell0_rebuild.cmd import arguments
from nova_cell0_rebuild.cmd import command_parsers
from nova_cell0_rebuild.cmd import purge_command
from nova_cell0_rebuild.cmd import startup
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates as gates_loader
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.operations import purge as purge_ops
from nova_cell0_rebuild.tasks import heal as heal_task

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

PROG = 'nova-cell0-rebuild-manage'

SUCCESS, ERROR, USAGE, ATTENTION, NOT_FOUND, NOT_SYNCED = 0, 1, 2, 3, 4, 5

#: Kept here too: tests and scripts have imported them from this module.
BEFORE_FORMS = purge_command.BEFORE_FORMS
before_cutoff = purge_command.before_cutoff
args = command_parsers.args


def _rebuildable(entry):
    """'yes', 'no', or 'yes (heals first)' for an interrupted move."""
    if not entry['rebuildable']:
        return 'no'
    return 'yes (heals first)' if entry['interrupted_move'] else 'yes'


def _fail(code, message):
    """Print one error line on stderr; return the exit code."""
    print('%s: error: %s' % (PROG, message), file=sys.stderr)
    return code


def _table(columns, rows):
    table = prettytable.PrettyTable(columns)
    table.align = 'l'
    for row in rows:
        table.add_row(row)
    return table.get_string()


class DbCommands(object):
    """Schema of the plugin's tables."""

    def sync(self):
        """Upgrade the plugin's tables to the newest schema."""
        migration.db_sync()
        print('Database is at revision %s.' % migration.db_version())
        return SUCCESS

    def version(self):
        """Print the current revision of the plugin's tables.

        Exits with 5, saying to run ``db sync``, when the tables do not
        exist or are behind this code.
        """
        current = migration.db_version()
        if current is not None:
            print(current)
        sync_needed = migration.sync_needed()
        if sync_needed:
            return _fail(NOT_SYNCED, sync_needed)
        return SUCCESS


class Cell0Commands(object):
    """Servers buried in cell0 and their moves out of it.

    Each public method is a command: ``nova-cell0-rebuild-manage list``.

    :param context: an admin RequestContext for every command, ``rebuild``
        included (given by tests: then Keystone is never asked).
    :param out: where to print.
    """

    def __init__(self, context=None, out=None):
        self._context = context
        self.out = out or sys.stdout

    @property
    def context(self):
        """An admin context without a token: enough for the databases."""
        if self._context is None:
            from nova import context as nova_context
            self._context = nova_context.get_admin_context()
        return self._context

    def _service_context(self):
        """The context of a rebuild: a service user's, with its token.

        A rebuild asks Glance, Cinder and Neutron as Nova's API would, with
        the caller's token; the command's caller is the service user of
        [cell0_rebuild_client] (or Nova's [service_user]).
        """
        if self._context is not None:
            return self._context
        return nova_service_context.service_context(CONF)

    def _print(self, text):
        print(text, file=self.out)

    @args('--project', metavar='<project id>', help='Only this project.')
    @args('--rebuildable', choices=['yes', 'no'],
          help='Only servers that can (yes) or cannot (no) be rebuilt.')
    @args('--older-than', type=arguments.non_negative_int,
          metavar='<seconds>',
          help='Only servers buried at least this long ago.')
    @args('--format', choices=['table', 'json'], default='table')
    @args('--page-size', type=arguments.positive_int, default=50,
          metavar='<n>', help='Servers read per query page.')
    @args('--progress', action='store_true',
          help='Report on stderr how many servers were scanned.')
    @args('--marker', type=arguments.server_uuid, metavar='<server uuid>',
          help='Start after this server (the last one of a previous page).')
    @args('--pages', type=arguments.positive_int, metavar='<n>',
          help='Read at most this many pages; the marker of the next call '
               'is printed on stderr.')
    def list(self, project=None, rebuildable=None, older_than=None,
             format='table', page_size=50, progress=False, marker=None,
             pages=None):
        """List servers in cell0 with whether each can be rebuilt."""
        gates = gates_loader.load_gates(CONF)
        want = None if rebuildable is None else rebuildable == 'yes'

        next_marker = []

        def report(count, marker):
            next_marker[:] = [marker]
            if progress:
                print('scanned %d servers' % count, file=sys.stderr)
        entries = list(inventory.cell0_servers(
            self.context, gates, project_id=project, rebuildable=want,
            older_than=older_than, limit=page_size, progress=report,
            marker=marker, pages=pages))
        if pages is not None and next_marker and next_marker[0]:
            print('next marker: %s' % next_marker[0], file=sys.stderr)
        if format == 'json':
            self._print(json.dumps(entries, indent=2, sort_keys=True))
            return SUCCESS
        self._print(_table(
            ['UUID', 'Project', 'Age (s)', 'Fault', 'Rebuildable',
             'Refused by', 'Reason'],
            [(e['uuid'], e['project_id'], e['age_seconds'],
              (e['fault'] or '')[:40], _rebuildable(e),
              e['refused_by'] or '', (e['reason'] or '')[:60])
             for e in entries]))
        return SUCCESS

    @args('uuid', type=arguments.server_uuid, metavar='<server uuid>')
    def show(self, uuid):
        """Show a server's create record, move journal and gate verdicts.

        Exits with 4 when nothing of the server is known: no instance
        mapping, create record or move journal names it.
        """
        details = inventory.show(self.context,
                                 gates_loader.load_gates(CONF), uuid)
        if not any(details[key] for key in ('mapped_to', 'cell0',
                                            'create_record', 'move_journal')):
            return _fail(NOT_FOUND, 'server %s not found: no instance '
                         'mapping, create record or move journal names it'
                         % uuid)
        self._print(json.dumps(details, indent=2, sort_keys=True))
        return SUCCESS

    @args('--instance', type=arguments.server_uuid, metavar='<server uuid>',
          help='Only the move of this server.')
    @args('--older-than', type=arguments.non_negative_int,
          metavar='<seconds>',
          help='Only moves not renewed for at least this long; never less '
               'than [cell0_rebuild] move_lease_seconds, since a move '
               'whose lease holds may still be running in a nova-api.')
    def heal(self, instance=None, older_than=None):
        """Finish or roll back moves out of cell0 that were interrupted.

        Also buries in cell0 again the servers whose hand-off the
        conductor dropped ([cell0_rebuild] hand_off_timeout), and releases
        what placement holds for servers deleted during their hand-off.
        """
        lease_seconds = max(CONF.cell0_rebuild.move_lease_seconds,
                            older_than or 0)
        results = heal_task.heal(
            self.context, lease_seconds, instance_uuid=instance,
            hand_off_timeout=CONF.cell0_rebuild.hand_off_timeout)
        self._print(_table(['UUID', 'Interrupted at', 'Outcome'], results))
        if any(outcome not in (heal_task.DELETED, heal_task.DONE,
                               heal_task.ROLLED_BACK, heal_task.REBURIED,
                               heal_task.CLAIM_RELEASED)
               for _, _, outcome in results):
            return ATTENTION
        return SUCCESS

    @args('uuid', type=arguments.server_uuid, metavar='<server uuid>')
    @args('--image', metavar='<image id>',
          help='Image to build from (default: the server\'s own).')
    def rebuild(self, uuid, image=None):
        """Rebuild a server from cell0, as the API does, as a service user.

        The user is that of [cell0_rebuild_client], or Nova's
        [service_user] when that section sets no auth_type. Exits with 4
        when the server does not exist or was deleted.
        """
        # A malformed threshold is the operator's to fix before Keystone's.
        microversion_settings.effective_min_microversion(CONF)
        context = self._service_context()
        try:
            prepared = rebuild_flow.rebuild_as_admin(context, CONF,
                                                     uuid, image_ref=image)
        except exception.RequestRefused as refusal:
            if refusal.status == 404:
                return _fail(NOT_FOUND, 'server %s not found' % uuid)
            self._print('Refused (%d): %s' % (refusal.status, refusal))
            return ATTENTION
        self._print('Server %s handed back to the conductor with image %s; '
                    'follow it with "openstack server show %s".'
                    % (uuid, prepared.image_id, uuid))
        return SUCCESS

    @args('--before', metavar='<age or date>',
          help='Only rows last changed before this time (default: now), '
               'create records, move journal rows and server history rows '
               'alike: ' + BEFORE_FORMS + '.')
    @args('--dry-run', action='store_true',
          help='Only print what would be deleted.')
    def purge(self, before=None, dry_run=False):
        """Delete records and journals of servers that landed or are gone.

        Pending create records whose servers are in cell0 are completed,
        not deleted. The cell0 history a move stashed is written back into
        the cell of its server (deleted or not), never dropped unwritten.
        Run it periodically (e.g. daily from cron): nothing else deletes
        the record of a server that landed in a real cell.
        """
        try:
            cutoff = before_cutoff(before) if before else timeutils.utcnow()
        except ValueError as exc:
            return _fail(USAGE, exc)
        result = purge_ops.purge(self.context, before=cutoff,
                                 dry_run=dry_run)
        for line in purge_command.report(result, dry_run):
            self._print(line)
        return SUCCESS


#: ``db sync``, ``db version``: commands grouped under a category.
CATEGORIES = {'db': DbCommands}
#: ``list``, ``show``, ``heal``, ``purge``: commands of their own.
COMMANDS = Cell0Commands


category_opt = cfg.SubCommandOpt(
    'category', title='Commands', help='Available commands',
    handler=command_parsers.handler(CATEGORIES, COMMANDS))


def _not_ready(category, action):
    """Why the command cannot run on these databases yet, or None.

    :returns: (exit code, one line) or None.
    """
    # db commands need the plugin's tables only; the others Nova's API
    # database too (cell and instance mappings).
    options = (('api_database', 'connection'),)
    if category == 'db':
        options = (('cell0_rebuild', 'connection'),) + options
    missing = startup.missing_option(CONF, PROG, options)
    if missing:
        return ERROR, missing
    # db version says it itself, after the revision.
    if category != 'db':
        sync_needed = migration.sync_needed()
        if sync_needed:
            return NOT_SYNCED, sync_needed
    return None


def _setup_logging():
    """Log where the operator asked, and only there.

    Without ``--log-file``, ``--log-dir``, ``--debug``, ``--use-stderr``,
    syslog or journald oslo.log would write to stdout, which carries the
    command's own output (JSON listings among it): then nothing is logged,
    not even on the stderr handler oslo.log sets up until it is configured,
    where warnings (keystoneauth's, when it cannot reach Keystone) would
    stand beside the error line.

    :returns: where the log goes, for the error line; None if nowhere.
    """
    if CONF.log_file or CONF.log_dir:
        logging.setup(CONF, 'nova')
        return CONF.log_file or CONF.log_dir
    if CONF.debug or CONF.use_stderr or CONF.use_syslog or CONF.use_journal:
        logging.setup(CONF, 'nova')
        return 'the log'
    root = std_logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(std_logging.NullHandler())
    return None


def main(argv=None):
    argv = sys.argv if argv is None else argv
    CONF.register_cli_opt(category_opt)
    plugin_conf.register_opts(CONF)
    try:
        startup.parse_args(argv, PROG, command_parsers.command_words(
            CATEGORIES, COMMANDS))
    except startup.ConfigurationError as exc:
        return _fail(USAGE if exc.missing else ERROR, exc)
    log_target = _setup_logging()
    nova_servers.register_nova_objects()
    objects.register_all()
    category = CONF.category.command_category
    command = CATEGORIES[category]() if category else COMMANDS()
    try:
        not_ready = _not_ready(category, CONF.category.action_fn)
        if not_ready:
            return _fail(*not_ready)
        return getattr(command, CONF.category.action_fn)(
            **command_parsers.action_kwargs(CONF.category))
    except Exception as exc:
        # One line an operator can read; the traceback goes to the log.
        reason = startup.one_line(exc)
        if log_target:
            LOG.exception('%s failed', ' '.join(
                filter(None, (category, CONF.category.action_fn))))
            hint = '(details are in %s)' % log_target
        else:
            hint = '(run with --log-file FILE or --debug for details)'
        print('%s: error: %s %s' % (PROG, reason, hint), file=sys.stderr)
        return ERROR
