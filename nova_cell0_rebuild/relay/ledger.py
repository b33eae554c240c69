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

"""The relays' shared record of announcements, in the plugin's database.

What a relay keeps in memory protects against a notification delivered
twice to it; this protects against one delivered again to another relay of
the pool, or to this relay restarted, once it was announced
(objects.RelayAnnouncement).

Which way each window errs:

* a relay dies after claiming a burial and before announcing it, or
  while announcing it: the notification, not acknowledged, comes back
  (to any relay of the pool) and is asked for again until the lease runs
  out (``[cell0_rebuild_relay] announce_lease_seconds``), then announced:
  late, never lost. If the first relay had published the scheduling event,
  Aardvark receives it twice;
* a relay announces, then its database write of ``announced`` fails, or
  it dies before that write: the same, once the lease ran out;
* a relay slower than its lease (more than ``announce_lease_seconds``
  between claim and publish): another may announce it too.

A burial announced late or twice costs pre-emptible servers Aardvark
deletes for nothing; a burial never announced leaves a server in cell0
that nobody rebuilds, which nobody notices. So the relay errs towards
announcing.
"""

import os
import socket

from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import relay_announcement as announcement


def relay_owner(host=None):
    """The name a relay holds leases under: host and process."""
    return 'relay:%s:%d' % (host or socket.gethostname(), os.getpid())


class Ledger(object):
    """Claims and settles burials for one relay.

    :param context_factory: returns the admin context to write with.
    :param lease_seconds: ``[cell0_rebuild_relay] announce_lease_seconds``.
    """

    CLAIMED = announcement.CLAIMED
    TAKEN_OVER = announcement.TAKEN_OVER
    HELD = announcement.HELD
    ANNOUNCED = announcement.ANNOUNCED

    def __init__(self, context_factory, lease_seconds, owner=None):
        self._context_factory = context_factory
        self._lease_seconds = lease_seconds
        self.owner = owner or relay_owner()

    def claim(self, instance_uuid, message_id):
        """:returns: (outcome, the claim to settle, or None)."""
        return objects.RelayAnnouncement.claim(
            self._context_factory(), instance_uuid, message_id, self.owner,
            self._lease_seconds)

    def announced(self, claim):
        """Record the announcement; False if its lease was taken over."""
        return claim.mark_announced()
