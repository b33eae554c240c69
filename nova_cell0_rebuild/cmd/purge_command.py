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

"""``nova-cell0-rebuild-manage purge``: its ``--before`` and its report."""

import datetime
import re
import warnings

from dateutil import parser as date_parser
from oslo_utils import timeutils

#: What ``purge --before`` accepts, for its help and its error.
BEFORE_FORMS = ('an age back from now (7d, 12h, 30m, 90s, 2w) or a date '
                'and time as nova-manage db purge --before takes it '
                '(2026-03-01, "2026-03-01 12:00:00", ISO 8601 such as '
                '2026-03-01T12:00:00+01:00, or what "date -u" prints); UTC '
                'unless it names a zone')
_AGE = re.compile(r'^\s*(\d+)\s*([smhdw])\s*$')
_AGE_UNITS = {'s': 'seconds', 'm': 'minutes', 'h': 'hours', 'd': 'days',
              'w': 'weeks'}

#: Every kind of row purge deletes: (key of its result, what a row is
#: called in the summary, how one row is listed).
DELETED_KINDS = (
    ('create_records', 'create records', '  create record %s'),
    ('move_journal', 'move journal rows', '  move journal of %s'),
    ('server_histories', 'server history rows',
     '  server history of %s (written back, or kept with the deleted '
     'server in cell0)'),
    ('relay_announcements', 'relay announcements',
     '  relay announcement of %s (server, message id)'),
)


def before_cutoff(value, now=None):
    """The time a ``purge --before`` value names, in UTC without a zone.

    :param value: an age (``7d``) or a date and time, see BEFORE_FORMS.
    :param now: the time an age counts back from (default: now, UTC).
    :returns: a naive UTC datetime, as the databases keep them.
    :raises: ValueError, one line saying what is accepted.
    """
    now = now or timeutils.utcnow()
    age = _AGE.match(value)
    try:
        if age:
            return now - datetime.timedelta(
                **{_AGE_UNITS[age.group(2)]: int(age.group(1))})
        with warnings.catch_warnings():
            # An unknown zone name (CET, say) would be silently dropped.
            warnings.simplefilter('error', date_parser.UnknownTimezoneWarning)
            return timeutils.normalize_time(date_parser.parse(value))
    except (ValueError, OverflowError, date_parser.UnknownTimezoneWarning):
        raise ValueError('invalid --before %r: give %s'
                         % (value, BEFORE_FORMS))


def _count_phrase(counts):
    """``1 create records, 0 move journal rows and 2 server history rows``.
    """
    parts = ['%d %s' % count for count in counts]
    return ', '.join(parts[:-1]) + ' and ' + parts[-1]


def report(result, dry_run):
    """The lines purge prints: every kind of row deleted, and the rest.

    :param result: what :func:`nova_cell0_rebuild.operations.purge.purge`
        returns.
    :returns: a list of lines.
    """
    lines = ['%s %s.' % ('Would delete' if dry_run else 'Deleted',
                         _count_phrase([(len(result[key]), name)
                                        for key, name, _ in DELETED_KINDS]))]
    for key, _name, row in DELETED_KINDS:
        lines.extend(row % each for each in result[key])
    accepted = result['accepted_create_records']
    if accepted:
        lines.append('%s %d pending create records of servers in cell0.'
                     % ('Would complete' if dry_run else 'Completed',
                        len(accepted)))
        lines.extend('  create record %s' % each for each in accepted)
    unmapped = result['unmapped_server_histories']
    if unmapped:
        lines.append('Kept the cell0 history of %d servers archived before '
                     'it was written back.' % len(unmapped))
        lines.extend('  history of %s' % each for each in unmapped)
    return lines
