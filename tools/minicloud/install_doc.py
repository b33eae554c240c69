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

"""The install guide's instructions, read from the guide itself.

The minicloud installs the plugin by doing what
``doc/source/install/index.rst`` says, taken from its code blocks: the pip
commands, ``OS_NOVA_CONFIG_FILES``, the paste sections and the ``db sync``
command. Change the guide and the job does what it now says; break it and
the job fails. Nothing here knows the filter's name or its position.
"""

import configparser
import shlex

GUIDE = 'doc/source/install/index.rst'


def code_blocks(text):
    """Yield (language, body) for each ``.. code-block::`` of an RST text."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip().startswith('.. code-block::'):
            continue
        language = line.split('::', 1)[1].strip()
        body = []
        while index < len(lines) and (not lines[index].strip()
                                      or lines[index].startswith(' ')):
            body.append(lines[index])
            index += 1
        yield language, _dedent(body)


def _dedent(lines):
    indents = [len(line) - len(line.lstrip()) for line in lines
               if line.strip()]
    cut = min(indents) if indents else 0
    return '\n'.join(line[cut:] for line in lines).strip('\n')


class InstallGuide(object):
    """What the install guide tells an operator to do."""

    def __init__(self, text):
        self.blocks = list(code_blocks(text))

    @classmethod
    def from_file(cls, path):
        with open(path) as guide:
            return cls(guide.read())

    def _console_lines(self):
        for language, body in self.blocks:
            if language == 'console':
                for line in body.splitlines():
                    yield line.strip()

    def _commands(self, program):
        """The console commands running ``program``, prompt taken off."""
        for line in self._console_lines():
            words = shlex.split(line, comments=True) if line[:1] == '$' \
                else shlex.split(line[1:], comments=True) \
                if line[:1] == '#' else []
            words = [word for word in words if word != '$']
            if words and words[0] == program:
                yield words

    def pip_commands(self):
        """``pip wheel`` / ``pip install`` commands, in the guide's order."""
        return list(self._commands('pip'))

    def manage_commands(self):
        """The ``nova-cell0-rebuild-manage`` commands, in order."""
        return list(self._commands('nova-cell0-rebuild-manage'))

    def nova_config_files(self):
        """The value the guide gives ``OS_NOVA_CONFIG_FILES``."""
        for line in self._console_lines():
            if line.startswith('OS_NOVA_CONFIG_FILES='):
                return shlex.split(line.split('=', 1)[1])[0]
        raise LookupError('%s sets no OS_NOVA_CONFIG_FILES' % GUIDE)

    def paste_sections(self):
        """The paste sections the guide adds or rewrites, by name."""
        sections = {}
        for language, body in self.blocks:
            if language != 'ini':
                continue
            parser = configparser.ConfigParser(interpolation=None)
            parser.optionxform = str
            parser.read_string(body)
            for name in parser.sections():
                if name.split(':', 1)[0] in ('filter', 'composite',
                                             'pipeline', 'app'):
                    sections[name] = dict(parser[name])
        if not sections:
            raise LookupError('%s has no paste section' % GUIDE)
        return sections


def apply_paste_sections(stock_text, sections):
    """Nova's stock api-paste.ini with the guide's sections applied.

    :returns: the new file's text.
    """
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read_string(stock_text)
    for name, options in sections.items():
        if not parser.has_section(name):
            parser.add_section(name)
        for key, value in options.items():
            parser[name][key] = value
    lines = []
    for name in parser.sections():
        lines.append('[%s]' % name)
        lines.extend('%s = %s' % (key, value)
                     for key, value in parser[name].items())
        lines.append('')
    return '\n'.join(lines)
