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

"""Argument types of nova-cell0-rebuild-manage, for argparse's ``type=``.

Each one turns a word of the command line into its value, or raises
ArgumentTypeError: argparse then prints the usage and one error line naming
the argument, and exits with 2, before the command reads any database.
"""

import argparse
import uuid as uuid_lib

from oslo_utils import uuidutils


def positive_int(value):
    """An integer of at least 1: a page size, a number of pages."""
    number = _int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(
            '%r is not a positive integer (1 or more)' % value)
    return number


def non_negative_int(value):
    """An integer of at least 0: a number of seconds."""
    number = _int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(
            '%r is not a non-negative integer (0 or more)' % value)
    return number


def server_uuid(value):
    """A server UUID, in Nova's form (lower case, with dashes)."""
    if not uuidutils.is_uuid_like(value):
        raise argparse.ArgumentTypeError('%r is not a server UUID' % value)
    return str(uuid_lib.UUID(value))


def _int(value):
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not an integer' % value)
