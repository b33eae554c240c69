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

"""What the tests' SQL statement counts leave out."""


def is_connection_ping(statement):
    """Whether *statement* is oslo.db's ping of a connection it checks out.

    oslo.db before 16.0.0 (the releases Nova 29 and 30 run with) sends
    ``SELECT 1`` on each connection it takes from the pool: a cost of the
    pool, not of the code measured, which the counts leave out so that they
    are the same on every supported release.
    """
    return ' '.join(statement.split()).upper() == 'SELECT 1'
