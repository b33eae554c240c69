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

"""Loopback only: where the sandbox may listen, and listening there alone.

THE SANDBOX IS NEVER A DEPLOYMENT: it has no Keystone and trusts the
identity its requests' headers claim, so it listens on loopback addresses
only (127.0.0.0/8 and ::1). This module imports nothing but the standard
library: the command line checks an address before Nova is imported.
"""

import ipaddress
import socket


class NotLoopback(ValueError):
    """A bind address outside 127.0.0.0/8 and ::1."""


def parse_bind(value):
    """Parse ``HOST:PORT`` (``[::1]:PORT`` for IPv6) into (host, port).

    Port 0 asks the system for a free port.

    :raises: NotLoopback for a host that is not a loopback address;
        ValueError for anything that is not HOST:PORT.
    """
    host, sep, port = value.rpartition(':')
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError('%r is not HOST:PORT' % value)
    host = host.strip('[]')
    if host == 'localhost':
        host = '127.0.0.1'
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError('%r is not an IP address (or localhost)' % host)
    if not address.is_loopback:
        raise NotLoopback(
            '%s is not a loopback address. The sandbox API trusts the '
            'identity sent in request headers, so it only listens on '
            '127.0.0.0/8 or ::1, never on an address other hosts can reach.'
            % host)
    return str(address), int(port)


def listen(host, port):
    """A socket listening on a loopback address, which it shares with none.

    No ``SO_REUSEPORT``: with it a second sandbox on a busy port would
    silently take half of the first one's connections. ``SO_REUSEADDR``
    only lets a restarted sandbox take its port back at once; Linux refuses
    it while another socket listens there.

    :param host: a loopback address, checked again here.
    :param port: a port, or 0 for a free one.
    :raises: OSError, e.g. when the port is in use.
    """
    parse_bind('[%s]:%d' % (host, port))
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(50)
    except OSError:
        listening.close()
        raise
    return listening
