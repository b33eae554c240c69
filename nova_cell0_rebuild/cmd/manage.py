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

Exit codes: 0 success, 1 error (printed as one line on stderr), 2 usage.
"""

import sys

from oslo_config import cfg

from nova_cell0_rebuild.adapters import nova_config
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.db import migration

CONF = cfg.CONF

PROG = 'nova-cell0-rebuild-manage'


class DbCommands(object):
    """Schema of the plugin's tables."""

    def sync(self):
        """Upgrade the plugin's tables to the newest schema."""
        migration.db_sync()
        print('Database is at revision %s.' % migration.db_version())
        return 0

    def version(self):
        """Print the current revision of the plugin's tables."""
        print(migration.db_version() or 'None')
        return 0


CATEGORIES = {
    'db': DbCommands,
}


def _add_command_parsers(subparsers):
    for category, command_class in CATEGORIES.items():
        parser = subparsers.add_parser(
            category, help=command_class.__doc__)
        actions = parser.add_subparsers(dest='action', metavar='<action>')
        actions.required = True
        for name in sorted(vars(command_class)):
            method = getattr(command_class, name)
            if name.startswith('_') or not callable(method):
                continue
            action = actions.add_parser(name, help=method.__doc__)
            action.set_defaults(action_fn=name)


category_opt = cfg.SubCommandOpt(
    'category', title='Command categories',
    help='Available categories', handler=_add_command_parsers)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    CONF.register_cli_opt(category_opt)
    plugin_conf.register_opts(CONF)
    try:
        nova_config.parse_args(argv, prog=PROG)
    except cfg.ConfigFilesNotFoundError as exc:
        print('%s: %s' % (PROG, exc), file=sys.stderr)
        return 2
    command = CATEGORIES[CONF.category.name]()
    try:
        return getattr(command, CONF.category.action_fn)()
    except Exception as exc:
        # One line an operator can read; the details are in the log.
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print('%s: error: %s' % (PROG, reason), file=sys.stderr)
        return 1
