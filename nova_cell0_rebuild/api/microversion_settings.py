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

"""Which microversions the rebuild-from-cell0 flow starts at.

``[cell0_rebuild] min_microversion`` and ``reaper_min_microversion`` take
any string, so that oslo.config never answers for them with its own
message: the range they take depends on the installed Nova, known here
only. nova-api's filter, the manage and status commands and the demo
check them with the same functions, so the same value is refused with the
same line everywhere.
"""

import re

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild import exception

#: The lowest min_microversion: below it, rebuild still takes personality.
LOWEST_MIN_MICROVERSION = '2.57'

#: A microversion as Nova writes them, X.Y: what min_microversion and
#: reaper_min_microversion are checked against before their range.
_MICROVERSION = re.compile(r'^[1-9][0-9]*\.(0|[1-9][0-9]*)$')


def check_min_microversion(value):
    """Parse ``[cell0_rebuild] min_microversion`` for the installed Nova.

    :param value: the option's value; None (unset) is the installed Nova's
        maximum microversion.
    :raises: InvalidConfiguration when not 2.N from 2.57 to Nova's maximum.
    """
    if value is None:
        return nova_api.max_version()
    return _check_microversion(
        'min_microversion', value, nova_api.max_version(),
        _('the maximum of the installed Nova'))


def check_reaper_min_microversion(value, min_version):
    """Parse ``[cell0_rebuild] reaper_min_microversion``.

    :param min_version: the effective min_microversion (APIVersionRequest).
    :raises: InvalidConfiguration when not 2.N from 2.57 to *min_version*.
    """
    return _check_microversion('reaper_min_microversion', value, min_version,
                               _('the effective min_microversion'))


def _check_microversion(name, value, highest, what_highest):
    """One line naming the option, its value and what it takes, if wrong.

    The options take any string, so that oslo.config never answers for
    them with its own message, which names its internals: the range they
    take depends on the installed Nova, known only here.
    """
    lowest = nova_api.parse(LOWEST_MIN_MICROVERSION)
    reason = _('%(name)s %(value)s is outside %(low)s .. %(high)s, '
               '%(what_high)s')
    version = None
    if _MICROVERSION.match(value):
        version = nova_api.parse(value)
    else:
        reason = _('%(name)s %(value)r is not a microversion: give 2.N, '
                   'from %(low)s to %(high)s, %(what_high)s')
    if version is None or not version.matches(lowest, highest):
        raise exception.InvalidConfiguration(reason=reason % {
            'name': name, 'value': value, 'low': LOWEST_MIN_MICROVERSION,
            'high': highest.get_string(), 'what_high': what_highest})
    return version


def effective_min_microversion(conf):
    """``[cell0_rebuild] min_microversion`` as in force, "2.N".

    :raises: InvalidConfiguration as :func:`check_min_microversion`.
    """
    return check_min_microversion(
        conf.cell0_rebuild.min_microversion).get_string()
