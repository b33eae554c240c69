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

"""The deadline grammar of a wait (pending.rst, "Opt-in")."""

import datetime

import hypothesis
from hypothesis import strategies as st
from oslotest import base

from nova_cell0_rebuild.pending import deadline

WEEK = 7 * 86400
START = datetime.datetime(2026, 12, 7, 10, 0, 0)
BURIED = datetime.datetime(2026, 12, 7, 9, 0, 0)

# Reproducible in CI: no example database, the same examples every run.
SETTINGS = hypothesis.settings(max_examples=200, deadline=None,
                               database=None, derandomize=True)

#: Instants from 1970 to 2100 without microseconds, naive UTC.
MOMENTS = st.datetimes(min_value=datetime.datetime(1970, 1, 1),
                       max_value=datetime.datetime(2100, 1, 1))
DURATIONS = st.sampled_from(sorted(deadline.UNITS)).flatmap(
    lambda unit: st.tuples(
        st.integers(1, deadline.MAX_DURATION_SECONDS //
                    deadline.UNITS[unit]),
        st.just(unit)))
MAX_WAITS = st.integers(60, 7776000)


class TestValidate(base.BaseTestCase):

    def test_durations_of_the_spec(self):
        for raw in ('90m', '6h', '2d', '1s', '3650d'):
            self.assertIsNone(deadline.validate(raw), raw)

    def test_instants_in_utc(self):
        for raw in ('2026-12-08T18:00:00Z', '2026-12-08T18:00:00.5Z',
                    '2026-12-08T18:00:00.123456Z',
                    '2026-12-08T18:00:00+00:00'):
            self.assertIsNone(deadline.validate(raw), raw)

    def test_malformed_durations(self):
        for raw in ('0s', '0d', '00m', '05m', '-5m', '+5m', '5 m', ' 5m',
                    '5m ', '5m\n', '1.5h', '1e3s', '5w', '5M', '5', 'm',
                    '', '٥m', '3651d', '87601h', '5256001m',
                    '315360001s'):
            self.assertRaises(deadline.MalformedDeadline,
                              deadline.validate, raw)

    def test_absurdly_large_numbers_are_refused_without_overflow(self):
        for raw in ('9' * 20 + 'd', '9' * 254 + 's', '1' + '0' * 5000 + 's'):
            exc = self.assertRaises(deadline.MalformedDeadline,
                                    deadline.validate, raw)
            self.assertIn('at most', str(exc))

    def test_naive_instant_is_refused_with_its_reason(self):
        exc = self.assertRaises(deadline.MalformedDeadline,
                                deadline.validate, '2026-12-08T18:00:00')
        self.assertIn("'2026-12-08T18:00:00'", str(exc))
        self.assertIn('time zone', str(exc))

    def test_other_offsets_are_refused_naming_the_offset(self):
        for offset in ('+02:00', '-05:00', '-00:00', '+0000', '+0200'):
            raw = '2026-12-08T18:00:00' + offset
            exc = self.assertRaises(deadline.MalformedDeadline,
                                    deadline.validate, raw)
            self.assertIn('not with ' + offset, str(exc))

    def test_malformed_instants(self):
        for raw in ('2026-02-30T18:00:00Z', '2026-12-08T24:00:00Z',
                    '2026-12-08T23:59:60Z', '2026-12-08 18:00:00Z',
                    '2026-12-08t18:00:00z', '2026-12-08T18:00Z',
                    '2026-12-08Z', '2026-12-08T18:00:00.1234567Z',
                    '0000-01-01T00:00:00Z', '20261208T180000Z'):
            self.assertRaises(deadline.MalformedDeadline,
                              deadline.validate, raw)

    def test_not_a_string(self):
        for raw in (6, None, 1.5, ['6h'], {'deadline': '6h'}, b'6h'):
            exc = self.assertRaises(deadline.MalformedDeadline,
                                    deadline.validate, raw)
            self.assertIn('give a string', str(exc))

    def test_is_a_value_error(self):
        self.assertTrue(issubclass(deadline.MalformedDeadline, ValueError))

    def test_message_quotes_the_value(self):
        exc = self.assertRaises(deadline.MalformedDeadline,
                                deadline.validate, 'soon')
        self.assertEqual(
            "Deadline 'soon' is not valid: give a duration such as 90m, 6h "
            "or 2d, or a UTC instant such as 2026-12-08T18:00:00Z.",
            str(exc))
        self.assertEqual("'soon'", exc.value)

    def test_message_truncates_a_huge_value(self):
        exc = self.assertRaises(deadline.MalformedDeadline,
                                deadline.validate, 'x' * 100000)
        self.assertEqual("'" + 'x' * 64 + "...'", exc.value)
        self.assertLess(len(str(exc)), 300)

    def test_message_escapes_control_characters(self):
        # The message goes to logs and to the API's last_reason.
        exc = self.assertRaises(deadline.MalformedDeadline,
                                deadline.validate, '6h\n\x1b[31m')
        self.assertEqual("'6h\\n\\x1b[31m'", exc.value)
        self.assertNotIn('\n', str(exc))

    def test_message_of_a_number_does_not_quote_it_as_a_string(self):
        exc = self.assertRaises(deadline.MalformedDeadline,
                                deadline.validate, 6)
        self.assertEqual('6', exc.value)


class TestParse(base.BaseTestCase):

    def test_units(self):
        for raw, seconds in (('45s', 45), ('90m', 5400), ('6h', 21600),
                             ('2d', 172800)):
            self.assertEqual(
                deadline.Parsed(datetime.timedelta(seconds=seconds), None),
                deadline.parse(raw))

    def test_instants_are_naive_utc(self):
        expected = datetime.datetime(2026, 12, 8, 18, 0, 0)
        for raw in ('2026-12-08T18:00:00Z', '2026-12-08T18:00:00+00:00'):
            parsed = deadline.parse(raw)
            self.assertEqual(deadline.Parsed(None, expected), parsed)
            self.assertIsNone(parsed.instant.tzinfo)

    def test_fraction(self):
        self.assertEqual(
            datetime.datetime(2026, 12, 8, 18, 0, 0, 120000),
            deadline.parse('2026-12-08T18:00:00.12Z').instant)


class TestResolve(base.BaseTestCase):

    def test_duration_counts_from_start(self):
        self.assertEqual(
            deadline.Resolved(START + datetime.timedelta(hours=6), False),
            deadline.resolve('6h', START, BURIED, WEEK))

    def test_instant_is_itself(self):
        self.assertEqual(
            deadline.Resolved(datetime.datetime(2026, 12, 8, 18), False),
            deadline.resolve('2026-12-08T18:00:00Z', START, BURIED, WEEK))

    def test_past_instant_is_kept(self):
        # Well formed: the wait it starts ends at once with "deadline".
        self.assertEqual(
            deadline.Resolved(datetime.datetime(2020, 1, 1), False),
            deadline.resolve('2020-01-01T00:00:00Z', START, BURIED, WEEK))

    def test_clamped_to_burial_plus_max_wait(self):
        limit = BURIED + datetime.timedelta(seconds=WEEK)
        self.assertEqual(deadline.Resolved(limit, True),
                         deadline.resolve('8d', START, BURIED, WEEK))
        self.assertEqual(
            deadline.Resolved(limit, True),
            deadline.resolve('2027-06-01T00:00:00Z', START, BURIED, WEEK))

    def test_exactly_the_limit_is_not_clamped(self):
        # START is an hour after the burial: 7 d - 1 h from START.
        self.assertEqual(
            deadline.Resolved(BURIED + datetime.timedelta(days=7), False),
            deadline.resolve('167h', START, BURIED, WEEK))

    def test_put_long_after_the_burial_is_clamped_from_the_burial(self):
        # PUT counts a duration from the request, the limit from the burial.
        request = BURIED + datetime.timedelta(days=6)
        self.assertEqual(
            deadline.Resolved(BURIED + datetime.timedelta(days=7), True),
            deadline.resolve('2d', request, BURIED, WEEK))

    def test_aware_datetimes_are_read_as_utc(self):
        zone = datetime.timezone(datetime.timedelta(hours=2))
        start = START.replace(tzinfo=datetime.timezone.utc).astimezone(zone)
        resolved = deadline.resolve('1h', start, BURIED, WEEK)
        self.assertEqual(START + datetime.timedelta(hours=1),
                         resolved.deadline)
        self.assertIsNone(resolved.deadline.tzinfo)

    def test_malformed_raises(self):
        self.assertRaises(deadline.MalformedDeadline, deadline.resolve,
                          'soon', START, BURIED, WEEK)

    def test_longest_duration_near_datetime_max_does_not_overflow(self):
        start = datetime.datetime.max - datetime.timedelta(days=1)
        self.assertEqual(
            deadline.Resolved(start + datetime.timedelta(seconds=60), True),
            deadline.resolve('3650d', start, start, 60))


class TestResolveProperties(base.BaseTestCase):

    @SETTINGS
    @hypothesis.given(duration=DURATIONS, start=MOMENTS,
                      max_wait=MAX_WAITS)
    def test_a_duration_is_start_plus_n_units_or_the_limit(
            self, duration, start, max_wait):
        number, unit = duration
        raw = '%d%s' % (number, unit)
        resolved = deadline.resolve(raw, start, start, max_wait)
        exact = start + datetime.timedelta(
            seconds=number * deadline.UNITS[unit])
        limit = start + datetime.timedelta(seconds=max_wait)
        self.assertEqual(min(exact, limit), resolved.deadline)
        self.assertEqual(exact > limit, resolved.clamped)

    @SETTINGS
    @hypothesis.given(duration=DURATIONS, start=MOMENTS, buried=MOMENTS,
                      max_wait=MAX_WAITS)
    def test_clamping_never_extends(self, duration, start, buried,
                                    max_wait):
        raw = '%d%s' % duration
        unclamped = deadline.resolve(raw, start, start,
                                     deadline.MAX_DURATION_SECONDS)
        resolved = deadline.resolve(raw, start, buried, max_wait)
        limit = buried + datetime.timedelta(seconds=max_wait)
        self.assertLessEqual(resolved.deadline, unclamped.deadline)
        self.assertLessEqual(resolved.deadline, limit)
        self.assertEqual(resolved.clamped,
                         resolved.deadline != unclamped.deadline)

    @SETTINGS
    @hypothesis.given(moment=MOMENTS, buried=MOMENTS, max_wait=MAX_WAITS,
                      offset=st.sampled_from(['Z', '+00:00']))
    def test_an_instant_is_itself_or_the_limit(self, moment, buried,
                                               max_wait, offset):
        raw = moment.strftime('%Y-%m-%dT%H:%M:%S')
        if moment.microsecond:
            raw += '.%06d' % moment.microsecond
        raw += offset
        resolved = deadline.resolve(raw, buried, buried, max_wait)
        limit = buried + datetime.timedelta(seconds=max_wait)
        self.assertEqual(deadline.Resolved(min(moment, limit),
                                           moment > limit), resolved)

    @SETTINGS
    @hypothesis.given(raw=st.text(max_size=300))
    def test_any_text_is_valid_or_refused_never_another_error(self, raw):
        try:
            parsed = deadline.parse(raw)
        except deadline.MalformedDeadline as exc:
            self.assertLess(len(str(exc)), 400)
            self.assertNotIn('\n', str(exc))
        else:
            self.assertEqual(1, [parsed.duration,
                                 parsed.instant].count(None))
