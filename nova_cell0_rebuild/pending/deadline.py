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

"""The deadline of a wait: its grammar, and the instant it stands for.

Pure: no database, no Nova. nova-api imports it on the create path (the
``cell0_rebuild:wait`` metadata key) and for ``PUT .../wait``, so it must
stay cheap and free of side effects. The grammar, from
:doc:`/contributor/specs/pending`, is one of:

* a **duration**: a positive integer, without sign, spaces or leading
  zeros, followed by ``s``, ``m``, ``h`` or ``d`` (``90m``, ``6h``,
  ``2d``). It counts from a start the caller gives: the server's first
  burial for the metadata opt-in, the request for ``PUT``. Durations
  longer than :data:`MAX_DURATION_SECONDS` are refused rather than clamped:
  they are typos, and refusing keeps the arithmetic far from the limits of
  ``datetime``;
* an **instant** in UTC, ISO 8601 with seconds and an optional fraction of
  at most 6 digits: ``2026-12-08T18:00:00Z``. The offset ``+00:00`` is
  accepted too, since it is the same instant and what Python's
  ``datetime.isoformat()`` writes for UTC; any other offset, ``-00:00``
  (RFC 3339's "offset unknown") and a time without offset are refused, so
  that a user's local time is never silently read as UTC. An instant
  already past is well formed: the wait it starts ends at once with reason
  ``deadline``.

Datetimes in and out are naive UTC, as ``oslo_utils.timeutils.utcnow()``
gives and the plugin's tables store.
"""

import collections
import datetime
import re

from oslo_utils import timeutils

from nova_cell0_rebuild._i18n import _

#: Seconds of each unit of a duration.
UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}

#: The longest duration accepted: ten years. ``[cell0_rebuild_pending]
#: max_wait_seconds`` (at most 90 days) clamps any accepted deadline anyway.
MAX_DURATION_SECONDS = 3650 * 86400

#: Characters of a refused value quoted in a message, at most.
QUOTE_LIMIT = 64

_DURATION = re.compile(r'([+-]?[0-9]+)([smhd])', re.ASCII)
_CANONICAL_NUMBER = re.compile(r'[1-9][0-9]*', re.ASCII)
_INSTANT = re.compile(
    r'(?P<stamp>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})'
    r'(?P<fraction>\.[0-9]{1,6})?'
    r'(?P<offset>Z|[+-][0-9]{2}:?[0-9]{2})?', re.ASCII)
_UTC_OFFSETS = ('Z', '+00:00')

_EXAMPLES = _('a duration such as 90m, 6h or 2d, or a UTC instant such as '
              '2026-12-08T18:00:00Z')

#: A parsed deadline: exactly one of the two is set.
Parsed = collections.namedtuple('Parsed', ['duration', 'instant'])

#: A resolved deadline (naive UTC) and whether max_wait_seconds clamped it.
Resolved = collections.namedtuple('Resolved', ['deadline', 'clamped'])


class MalformedDeadline(ValueError):
    """A deadline that is not of the grammar; its message is for the user.

    :ivar value: the refused value, quoted and truncated for messages.
    """

    def __init__(self, raw, reason):
        self.value = quote(raw)
        super().__init__(_('Deadline %(value)s is not valid: %(reason)s.')
                         % {'value': self.value, 'reason': reason})


def quote(raw):
    """*raw* as a message quotes it: truncated, control characters escaped.

    A string is quoted ('6h'); anything else is shown as Python writes it
    (6, None), so that a number is not mistaken for the string "6".
    """
    text = raw if isinstance(raw, str) else repr(raw)
    truncated = len(text) > QUOTE_LIMIT
    text = ''.join(char if char.isprintable() else repr(char)[1:-1]
                   for char in text[:QUOTE_LIMIT])
    if truncated:
        text += '...'
    return "'%s'" % text if isinstance(raw, str) else text


def parse(raw):
    """The duration or instant *raw* stands for.

    :returns: Parsed(duration=timedelta, instant=None) or
        Parsed(duration=None, instant=naive UTC datetime).
    :raises: MalformedDeadline.
    """
    if not isinstance(raw, str):
        raise MalformedDeadline(raw, _('give a string: %s') % _EXAMPLES)
    duration = _DURATION.fullmatch(raw)
    if duration is not None:
        return Parsed(_duration(raw, *duration.groups()), None)
    instant = _INSTANT.fullmatch(raw)
    if instant is not None:
        return Parsed(None, _instant(raw, instant))
    raise MalformedDeadline(raw, _('give %s') % _EXAMPLES)


def _duration(raw, number, unit):
    if not _CANONICAL_NUMBER.fullmatch(number):
        raise MalformedDeadline(
            raw, _('a duration is a positive integer, without sign or '
                   'leading zeros, followed by s, m, h or d'))
    # Compare digits before converting: a long number costs nothing.
    limit = MAX_DURATION_SECONDS // UNITS[unit]
    if len(number) > len(str(limit)) or int(number) > limit:
        raise MalformedDeadline(
            raw, _('a duration is at most %(limit)d%(unit)s (ten years)')
            % {'limit': limit, 'unit': unit})
    return datetime.timedelta(seconds=int(number) * UNITS[unit])


def _instant(raw, match):
    offset = match.group('offset')
    if offset is None:
        raise MalformedDeadline(
            raw, _('an instant needs its time zone: end it with Z, in UTC'))
    if offset not in _UTC_OFFSETS:
        raise MalformedDeadline(
            raw, _('an instant must be in UTC, ending with Z (or +00:00), '
                   'not with %s') % offset)
    try:
        stamp = datetime.datetime.strptime(match.group('stamp'),
                                           '%Y-%m-%dT%H:%M:%S')
    except ValueError:
        raise MalformedDeadline(raw, _('no such date or time'))
    fraction = match.group('fraction')
    if fraction:
        stamp = stamp.replace(microsecond=int(fraction[1:].ljust(6, '0')))
    return stamp


def validate(raw):
    """Raise MalformedDeadline unless *raw* is of the grammar.

    Used at create, before any burial gives a duration its start.
    """
    parse(raw)


def resolve(raw, start, buried_at, max_wait_seconds):
    """The instant a wait ends: Resolved(deadline, clamped).

    :param start: what a duration counts from: the server's first burial
        for the metadata opt-in, the request for ``PUT``.
    :param buried_at: the server's first burial; no deadline is later than
        it plus *max_wait_seconds* (later ones are clamped to that,
        ``clamped`` True).
    :raises: MalformedDeadline.
    """
    parsed = parse(raw)
    start = _naive(start)
    limit = _naive(buried_at) + datetime.timedelta(seconds=max_wait_seconds)
    if parsed.instant is not None:
        deadline = parsed.instant
    elif parsed.duration > limit - start:
        # Compared before adding: start + duration could overflow.
        return Resolved(limit, True)
    else:
        deadline = start + parsed.duration
    if deadline > limit:
        return Resolved(limit, True)
    return Resolved(deadline, False)


def _naive(moment):
    """*moment* as naive UTC; an aware datetime is converted, not refused."""
    return timeutils.normalize_time(moment)
