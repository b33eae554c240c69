#!/usr/bin/env python3
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
"""Write constraints/nova-XX.txt for the older Nova releases we support.

Each file is the upper-constraints.txt of one stable series of
openstack/requirements, read from a pinned commit and copied unmodified,
followed by the pins upstream does not carry: Nova and placement themselves
(services are never in upper-constraints), and what openstack/requirements
leaves out but our test venvs install (certifi, hacking and its flake8,
hypothesis), and setuptools where Nova still needs its pkg_resources
(29 and 30; elsewhere setuptools stays unpinned, as in the Nova 34 freeze).

The newest release (Nova 34) keeps using the top-level
upper-constraints.txt, a pip freeze; this script does not touch it.

Usage, with a clone or bare mirror of openstack/requirements::

    python tools/generate_constraints.py --requirements-git-dir \\
        /path/to/requirements/.git

It writes constraints/nova-29.txt .. constraints/nova-33.txt next to this
script's tools/ directory (or in --output-dir). The output depends only on
the commits pinned in SERIES and on this file, so running it again gives
byte-identical files. --check-refs also reports when a series' ref has
moved past its pinned commit, which is the moment to bump COMMIT below and
regenerate.
"""

import argparse
import os
import re
import subprocess
import sys

# One entry per supported Nova release older than the newest. "ref" is
# where the series' constraints live today: stable/<series> while the
# series is maintained, then unmaintained/<series>, then the <series>-eol
# tag once the branch is deleted. "commit" pins the exact text used.
# "extra" are the pins upstream does not carry, newest patch release of
# the series for nova and openstack-placement (openstack/releases
# deliverables/<name>/{nova,placement}.yaml and PyPI).
_NOT_IN_UPSTREAM = (
    # certifi is on upstream's denylist, yet requests pulls it in; the
    # version is the one in the top-level upper-constraints.txt (Nova 34).
    ('certifi', '2026.10.19.post1'),
    # hacking pins flake8 and flake8 pins its checkers; none of them is
    # in upstream upper-constraints (they are on its denylist).
    ('hacking', '8.1.0'),
    ('flake8', '7.3.0'),
    ('mccabe', '0.7.0'),
    ('pycodestyle', '2.14.0'),
    ('pyflakes', '3.4.0'),
    ('hypothesis', '6.170.17'),
)

# Nova 29 and 30 import pkg_resources (nova/virt/__init__.py) but do not
# require setuptools; Paste pulls in the newest, and setuptools 82.0.0
# removed pkg_resources. 81.0.0 is the last release that has it.
_PKG_RESOURCES = (('setuptools', '81.0.0'),)

SERIES = (
    {
        'nova_major': 29,
        'series': '2024.1',
        'name': 'Caracal',
        'ref': 'refs/heads/unmaintained/2024.1',
        'commit': '312d8c11ed44589895187c8ef40c927f321f129c',
        'extra': (('nova', '29.4.0'), ('openstack-placement', '11.0.1'))
        + _NOT_IN_UPSTREAM + _PKG_RESOURCES,
    },
    {
        'nova_major': 30,
        'series': '2024.2',
        'name': 'Dalmatian',
        'ref': 'refs/tags/2024.2-eol',
        'commit': '9cc6272c9527bc175aedc478acb8e5fca4567ba7',
        'extra': (('nova', '30.3.0'), ('openstack-placement', '12.0.2'))
        + _NOT_IN_UPSTREAM + _PKG_RESOURCES,
    },
    {
        'nova_major': 31,
        'series': '2025.1',
        'name': 'Epoxy',
        'ref': 'refs/heads/stable/2025.1',
        'commit': '19088b84dc74c8f1e31f2547b8c3d5de81a6695e',
        'extra': (('nova', '31.3.1'), ('openstack-placement', '13.0.1'))
        + _NOT_IN_UPSTREAM,
    },
    {
        'nova_major': 32,
        'series': '2025.2',
        'name': 'Flamingo',
        'ref': 'refs/heads/stable/2025.2',
        'commit': '0e88245f541e4c82e3b0cf4b63cf50d7b7322d46',
        'extra': (('nova', '32.2.1'), ('openstack-placement', '14.0.0'))
        + _NOT_IN_UPSTREAM,
    },
    {
        'nova_major': 33,
        'series': '2026.1',
        'name': 'Gazpacho',
        'ref': 'refs/heads/stable/2026.1',
        'commit': '0190a07f0add94372d529cbddae77bdc22f3c96c',
        'extra': (('nova', '33.0.2'), ('openstack-placement', '15.0.0'))
        + _NOT_IN_UPSTREAM,
    },
)

_NAME_RE = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)')


def _git(git_dir, *args):
    return subprocess.run(
        ['git', '--git-dir', git_dir] + list(args),
        check=True, capture_output=True, text=True).stdout


def _normalize(name):
    """PEP 503 name normalization, so 'oslo.db' == 'oslo-db'."""
    return re.sub(r'[-_.]+', '-', name).lower()


def _pinned_names(text):
    names = set()
    for line in text.splitlines():
        match = _NAME_RE.match(line)
        if match and not line.lstrip().startswith('#'):
            names.add(_normalize(match.group(1)))
    return names


def render(git_dir, series):
    """Return the text of constraints/nova-XX.txt for one series.

    :raises ValueError: if an extra pin is already in upstream's file.
    """
    commit = series['commit']
    upstream = _git(git_dir, 'show', '%s:upper-constraints.txt' % commit)
    date = _git(git_dir, 'show', '-s', '--format=%cs', commit).strip()
    clash = _pinned_names(upstream) & {
        _normalize(name) for name, _ in series['extra']}
    if clash:
        raise ValueError('%s: upstream already pins %s; drop it from extra'
                         % (series['series'], ', '.join(sorted(clash))))
    ref = series['ref'].replace('refs/heads/', '').replace('refs/tags/', '')
    lines = [
        '# Constraints for Nova %d (OpenStack %s "%s"), Python 3.11.'
        % (series['nova_major'], series['series'], series['name']),
        '# GENERATED by tools/generate_constraints.py; do not edit by hand,',
        '# change SERIES in that script and run:',
        '#   python tools/generate_constraints.py --requirements-git-dir '
        '<openstack/requirements git dir>',
        '# Source: openstack/requirements upper-constraints.txt at %s,'
        % ref,
        '#   commit %s (%s), copied unmodified below.' % (commit, date),
        '#',
        '# Not in upstream upper-constraints.txt, added for this project:',
    ]
    lines += ['%s===%s' % pin for pin in series['extra']]
    lines += [
        '#',
        '# openstack/requirements %s upper-constraints.txt:' % ref,
    ]
    text = '\n'.join(lines) + '\n' + upstream
    if not text.endswith('\n'):
        text += '\n'
    return text


def check_refs(git_dir):
    """Print series whose ref has moved past the pinned commit."""
    moved = False
    for series in SERIES:
        try:
            head = _git(git_dir, 'rev-parse',
                        series['ref'] + '^{commit}').strip()
        except subprocess.CalledProcessError:
            print('%s: %s not found (branch deleted? look for the '
                  '%s-eol tag)' % (series['series'], series['ref'],
                                   series['series']))
            moved = True
            continue
        if head != series['commit']:
            print('%s: %s is at %s, SERIES pins %s'
                  % (series['series'], series['ref'], head,
                     series['commit']))
            moved = True
    return moved


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requirements-git-dir', required=True,
                        help='git directory of an openstack/requirements '
                             'clone or mirror (its .git, or a bare repo)')
    parser.add_argument('--output-dir',
                        default=os.path.join(os.path.dirname(here),
                                             'constraints'))
    parser.add_argument('--check-refs', action='store_true',
                        help='only report series whose ref moved on')
    args = parser.parse_args(argv)
    if args.check_refs:
        return 1 if check_refs(args.requirements_git_dir) else 0
    os.makedirs(args.output_dir, exist_ok=True)
    for series in SERIES:
        path = os.path.join(args.output_dir,
                            'nova-%d.txt' % series['nova_major'])
        with open(path, 'w', encoding='utf-8', newline='\n') as out:
            out.write(render(args.requirements_git_dir, series))
        print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
