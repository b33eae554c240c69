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

"""Where the ``cell0_rebuild`` filter sits in nova-api's paste pipelines.

Read from the paste file itself, without loading it: the ``osapi_compute``
URL map names the API pipelines, and each must run the filter right after
``keystonecontext``, which puts the request context it needs in place.
"""

import configparser

#: The application nova-api loads from its paste file.
URL_MAP = 'composite:osapi_compute'
#: The filter that makes the request context.
CONTEXT_FILTER = 'keystonecontext'

_OUR_USES = ('egg:nova-cell0-rebuild#cell0_rebuild',
             'egg:nova_cell0_rebuild#cell0_rebuild')
_OUR_FACTORY = 'nova_cell0_rebuild.api.filter:filter_factory'

# What a pipeline can be: the results, best first.
RIGHT_AFTER_CONTEXT = 'right after keystonecontext'
LATER = 'after keystonecontext, not right after it'
MISSING = 'missing'
BEFORE_CONTEXT = 'not after keystonecontext'
TWICE = 'listed more than once'
UNREADABLE = 'not a pipeline that can be read'


class PasteFileError(Exception):
    """The file is not a paste file nova-api can serve its API from."""


def _read(path):
    parser = configparser.RawConfigParser(strict=False)
    try:
        if not parser.read(path):
            raise PasteFileError('%s cannot be read' % path)
    except configparser.Error as exc:
        raise PasteFileError('%s is not a paste file: %s' % (path, exc))
    return parser


def _our_filters(parser):
    """Names of the filter sections that load the cell0_rebuild filter."""
    names = set()
    for section in parser.sections():
        if not section.startswith('filter:'):
            continue
        use = ''.join(parser.get(section, 'use', fallback='').split())
        factory = ''.join(parser.get(section, 'paste.filter_factory',
                                     fallback='').split())
        if use in _OUR_USES or factory == _OUR_FACTORY:
            names.add(section.split(':', 1)[1].strip())
    return names


def _pipeline(parser, name):
    """The filters and app of a pipeline or of a Nova pipeline composite."""
    if parser.has_option('composite:%s' % name, 'keystone'):
        # nova.api.auth:pipeline_factory_v21 runs the "keystone" pipeline.
        return parser.get('composite:%s' % name, 'keystone').split()
    if parser.has_option('pipeline:%s' % name, 'pipeline'):
        return parser.get('pipeline:%s' % name, 'pipeline').split()
    return None


def _position(names, ours):
    if names is None:
        return UNREADABLE
    where = [i for i, name in enumerate(names) if name in ours]
    if not where:
        return MISSING
    if len(where) > 1:
        return TWICE
    if CONTEXT_FILTER not in names or where[0] < names.index(
            CONTEXT_FILTER):
        return BEFORE_CONTEXT
    if where[0] == names.index(CONTEXT_FILTER) + 1:
        return RIGHT_AFTER_CONTEXT
    return LATER


def positions(path):
    """Where the filter sits in each API pipeline of a paste file.

    The API pipelines are those the ``osapi_compute`` URL map mounts below
    a version (``/v2.1/+``, ``/v2/+``).

    :returns: {pipeline name: one of RIGHT_AFTER_CONTEXT, LATER, MISSING,
        BEFORE_CONTEXT, TWICE, UNREADABLE}
    :raises: PasteFileError
    """
    parser = _read(path)
    if not parser.has_section(URL_MAP):
        raise PasteFileError('%s has no [%s] section: it is not the paste '
                             'file of nova-api' % (path, URL_MAP))
    pipelines = sorted({value.strip() for key, value in parser.items(URL_MAP)
                        if key.strip().endswith('/+')})
    if not pipelines:
        raise PasteFileError('[%s] of %s mounts no API pipeline'
                             % (URL_MAP, path))
    ours = _our_filters(parser)
    return {name: _position(_pipeline(parser, name), ours)
            for name in pipelines}
