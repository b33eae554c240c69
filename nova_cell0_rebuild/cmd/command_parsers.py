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

"""argparse sub-commands from command classes, as nova-manage builds them.

Each public method of a command class is a command; its arguments are
declared with :func:`args` and handed to the method as keyword arguments
(``action_kwarg_<name>`` in oslo.config's parsed ``category``).
"""


def args(*arg_list, **kwargs):
    """Declare one argparse argument of a command method."""
    def _decorator(func):
        if not hasattr(func, 'args'):
            func.args = []
        func.args.insert(0, (arg_list, kwargs))
        return func
    return _decorator


def public_methods(command_class):
    """(name, method) of each command of *command_class*, by name."""
    for name in sorted(vars(command_class)):
        method = getattr(command_class, name)
        if not name.startswith('_') and callable(method):
            yield name, method


def _add_action(subparsers, name, method, category):
    action = subparsers.add_parser(
        name, help=(method.__doc__ or '').split('\n')[0])
    names = []
    for arg_list, kwargs in getattr(method, 'args', []):
        kwargs = dict(kwargs)
        dest = kwargs.pop('dest', None) or arg_list[0].lstrip(
            '-').replace('-', '_')
        names.append(dest)
        if arg_list[0].startswith('-'):
            kwargs['dest'] = 'action_kwarg_' + dest
            action.add_argument(*arg_list, **kwargs)
        else:
            action.add_argument('action_kwarg_' + dest, *arg_list[1:],
                                **kwargs)
    action.set_defaults(command_category=category, action_fn=name,
                        action_kwargs=names)


def handler(categories, commands):
    """The SubCommandOpt handler that adds every command's parser.

    :param categories: {word: class}, commands grouped under a word
        (``db sync``).
    :param commands: the class whose methods are commands of their own.
    """
    def _add_command_parsers(subparsers):
        for category, command_class in categories.items():
            parser = subparsers.add_parser(category,
                                           help=command_class.__doc__)
            actions = parser.add_subparsers(dest='action',
                                            metavar='<action>')
            actions.required = True
            for name, method in public_methods(command_class):
                _add_action(actions, name, method, category)
        for name, method in public_methods(commands):
            _add_action(subparsers, name, method, None)
    return _add_command_parsers


def command_words(categories, commands):
    """The words that start a command: ``db``, ``list``, ``show``..."""
    return set(categories) | {name for name, _ in public_methods(commands)}


def action_kwargs(parsed):
    """The parsed command's arguments, by name, from ``CONF.category``."""
    return {name: getattr(parsed, 'action_kwarg_' + name)
            for name in parsed.action_kwargs}
