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

"""What ``purge`` prints: every kind of row it deletes, dry run or not."""

import testtools

from nova_cell0_rebuild.cmd import purge_command


def _result(**rows):
    result = {'create_records': [], 'move_journal': [],
              'server_histories': [], 'relay_announcements': [],
              'accepted_create_records': [],
              'unmapped_server_histories': []}
    result.update(rows)
    return result


class ReportTest(testtools.TestCase):

    def test_every_kind_of_deleted_row_is_counted_and_listed(self):
        result = _result(create_records=['req-1'], move_journal=['s1'],
                         server_histories=['s1', 's2'],
                         relay_announcements=['s3 m1'])
        for dry_run, verb in ((True, 'Would delete'), (False, 'Deleted')):
            self.assertEqual(
                ['%s 1 create records, 1 move journal rows, 2 server '
                 'history rows and 1 relay announcements.' % verb,
                 '  create record req-1',
                 '  move journal of s1',
                 '  server history of s1 (written back, or kept with the '
                 'deleted server in cell0)',
                 '  server history of s2 (written back, or kept with the '
                 'deleted server in cell0)',
                 '  relay announcement of s3 m1 (server, message id)'],
                purge_command.report(result, dry_run))

    def test_nothing_to_delete_is_one_line(self):
        self.assertEqual(['Deleted 0 create records, 0 move journal rows, '
                          '0 server history rows and 0 relay '
                          'announcements.'],
                         purge_command.report(_result(), False))

    def test_completed_records_and_kept_histories(self):
        lines = purge_command.report(_result(
            accepted_create_records=['req-2'],
            unmapped_server_histories=['s3']), True)
        self.assertEqual(
            ['Would delete 0 create records, 0 move journal rows, 0 '
             'server history rows and 0 relay announcements.',
             'Would complete 1 pending create records of servers in cell0.',
             '  create record req-2',
             'Kept the cell0 history of 1 servers archived before it was '
             'written back.',
             '  history of s3'], lines)
