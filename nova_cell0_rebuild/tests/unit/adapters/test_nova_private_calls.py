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

"""Canary: every Nova internal the adapters call is as listed, on this Nova.

A Nova release that renames or reshapes one of them fails here, naming it,
instead of failing a rebuild in production.
"""

import ast
import importlib
import inspect
import os

import ddt
import testtools

from nova_cell0_rebuild.adapters import nova_private_calls as table
from nova_cell0_rebuild.tests import microversions as mv

NOVA_MAJOR = mv.NOVA_MAJOR
ADAPTERS = os.path.dirname(os.path.abspath(table.__file__))


def resolve(path):
    """The object at a dotted path (a class's own attribute, unbound)."""
    parts = path.split('.')
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module('.'.join(parts[:split]))
        except ImportError:
            continue
        break
    for name in parts[split:]:
        found = (inspect.getattr_static(found, name)
                 if inspect.isclass(found) else getattr(found, name))
        if isinstance(found, (staticmethod, classmethod)):
            found = found.__func__
    return found


def parameters(function):
    """Declared parameters, as the table writes them."""
    names = []
    for parameter in inspect.signature(function).parameters.values():
        prefix = {parameter.VAR_POSITIONAL: '*',
                  parameter.VAR_KEYWORD: '**'}.get(parameter.kind, '')
        names.append(prefix + parameter.name)
    return tuple(names)


@ddt.ddt
class PrivateCallsTest(testtools.TestCase):

    def test_the_installed_nova_was_checked(self):
        self.assertIn(NOVA_MAJOR, table.CHECKED_RELEASES,
                      'Nova %d: check every entry of nova_private_calls '
                      'on it, then add it to CHECKED_RELEASES' % NOVA_MAJOR)

    @ddt.idata(sorted(table.CALLS.items()))
    @ddt.unpack
    def test_call(self, path, shapes):
        expected = [shape for shape, releases in shapes.items()
                    if NOVA_MAJOR in releases]
        if not expected:
            self.assertRaises((AttributeError, ImportError), resolve, path)
            return
        self.assertEqual(expected, [parameters(resolve(path))], path)

    @ddt.idata(sorted(table.ATTRIBUTES.items()))
    @ddt.unpack
    def test_attribute(self, path, releases):
        if NOVA_MAJOR in releases:
            resolve(path)
        else:
            self.assertRaises((AttributeError, ImportError), resolve, path)


class TableCoversTheAdaptersTest(testtools.TestCase):
    """Each private Nova name an adapter uses is in the table."""

    def _private_names_used(self):
        used = set()
        for name in os.listdir(ADAPTERS):
            if not name.endswith('.py'):
                continue
            with open(os.path.join(ADAPTERS, name)) as source:
                tree = ast.parse(source.read())
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute)
                        and node.attr.startswith('_')
                        and not node.attr.startswith('__')
                        and not (isinstance(node.value, ast.Name)
                                 and node.value.id in ('self', 'cls'))):
                    used.add(node.attr)
        return used

    def test_every_private_name_is_listed(self):
        listed = {path.rsplit('.', 1)[-1]
                  for path in list(table.CALLS) + list(table.ATTRIBUTES)}
        listed |= {path.split('.')[-2] for path in table.CALLS
                   if path.endswith('.__init__')}
        # Set from _view_builder_class by Nova's Controller constructor.
        listed.add('_view_builder')
        # Our own private names, not Nova's.
        ours = {'_context', '_servers_controller', '_compute_api',
                '_schemas'}
        self.assertEqual(set(), self._private_names_used() - listed - ours)
