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

"""``.. bench-results:: FILE``: the committed bench run, from its JSON.

The numbers on the performance page come from the JSON the bench wrote
(``tox -e bench``, then ``--render RUN.json --output FILE``), never typed
by hand. ``:part:`` chooses what is shown:

``run``
    when, where and on what the run was made (machine, versions, commit).
``targets``
    one row per target: what is wanted, the value on each database and
    the verdict.
``tables``
    the tables the bench printed, one per database.
``statements``
    the statements of one rebuild's API request and its comparison with
    Nova's create, one per database.

The extension reads only the JSON: building the documentation runs no
part of Nova.
"""

import json

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

PARTS = ('run', 'targets', 'tables', 'statements')


def _wanted(target):
    _what, comparison, limit = target
    if limit is None:
        return comparison
    return '%s %s' % (comparison, limit)


def _value(name, value):
    if isinstance(value, bool):
        return 'equal' if value else 'different'
    if name == 'B3':
        return '%+.1f %%' % (value * 100)
    if name == 'B4 move':
        return '%+d' % value
    return '%.2f' % value


def _table(header, rows, widths):
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)

    def row_of(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=cell)
            row += entry
        return row

    head = nodes.thead()
    head += row_of(header)
    group += head
    body = nodes.tbody()
    for cells in rows:
        body += row_of(cells)
    group += body
    return table


class BenchResults(SphinxDirective):
    required_arguments = 1
    option_spec = {'part': lambda arg: directives.choice(arg, PARTS)}

    def run(self):
        relative, path = self.env.relfn2path(self.arguments[0])
        self.env.note_dependency(relative)
        with open(path) as source:
            document = json.load(source)
        part = self.options.get('part', 'tables')
        return getattr(self, '_' + part)(document)

    def _run(self, document):
        meta = document['meta']
        versions = meta['versions']
        runs = ', '.join('%s (%s, %.0f s)' % (
            run['database'], run['server'], run['seconds'])
            for run in document['runs'])
        text = (
            '%(date)s, commit %(commit)s%(dirty)s: %(machine)s, %(platform)s; '
            'Python %(python)s, Nova %(nova)s, openstack-placement '
            '%(placement)s, SQLAlchemy %(sqlalchemy)s, eventlet %(eventlet)s. '
            'Databases: %(runs)s. Command: %(command)s.' % {
                'date': meta['date'], 'commit': meta['git']['commit'],
                'dirty': (' with %d modified files' %
                          meta['git']['modified_files']
                          if meta['git']['modified_files'] else ''),
                'machine': meta['machine_line'],
                'platform': meta['platform'], 'python': versions['python'],
                'nova': versions['nova'],
                'placement': versions['openstack-placement'],
                'sqlalchemy': versions['sqlalchemy'],
                'eventlet': versions['eventlet'], 'runs': runs,
                'command': meta['command']})
        return [nodes.paragraph(text=text)]

    def _targets(self, document):
        targets = document['meta']['targets']
        runs = document['runs']
        header = (['target', 'wanted'] +
                  [run['database'] for run in runs] + ['verdict'])
        rows = []
        for name, target in targets.items():
            cells = ['%s %s' % (name, target[0]), _wanted(target)]
            verdicts = []
            for run in runs:
                summary = run['summary']
                cells.append(_value(name, summary['values'][name]))
                verdicts.append(summary['verdicts'][name])
            cells.append(' / '.join(verdicts))
            rows.append(cells)
        return [_table(header, rows,
                       [40, 10] + [10] * len(runs) + [16])]

    def _literal(self, document, key):
        result = []
        for run in document['runs']:
            block = nodes.literal_block(run[key], run[key])
            block['language'] = 'text'
            result.append(block)
        return result

    def _tables(self, document):
        return self._literal(document, 'table')

    def _statements(self, document):
        return self._literal(document, 'statements_table')


def setup(app):
    app.add_directive('bench-results', BenchResults)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
