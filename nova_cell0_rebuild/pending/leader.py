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

"""Which copy of the pending service dispatches: a tooz lock and an epoch.

Fairness and "one freed slot, one rebuild" are global, so exactly one copy
dispatches; the others stand by (spec ``pending``, "Several copies").

* **Election, fast and cheap: a tooz lock.** Every tooz driver has locks
  (etcd3, redis, ZooKeeper, MySQL, a file for copies on one host); leader
  election proper exists only on redis and ZooKeeper. Each copy tries the
  lock without blocking every :data:`ELECTION_SECONDS`; the holder leads.
* **Safety: the epoch.** A lock can be held by two copies for a while (a
  redis key expiring under a paused process). The copy elected takes a
  new epoch (:class:`~nova_cell0_rebuild.objects.PendingEpoch`), and every
  dispatch first renews the epoch's heartbeat where the epoch is still its
  own: once a newer copy took one, the old copy's renewal fails and it
  stops, whatever its lock says.
* **No coordination URL: one copy.** Without ``[cell0_rebuild_pending]
  coordination_url`` nothing elects; a copy refuses to start while the
  epoch's heartbeat is younger than :data:`STALE_SECONDS` and another
  host's (another copy runs), and takes over from one that stopped
  beating. A copy restarted on the same host takes over at once; the new
  epoch deposes the old process should it still run.
"""

import datetime

from oslo_log import log as logging
from oslo_utils import timeutils
from tooz import coordination

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild import objects

LOG = logging.getLogger(__name__)

#: The epoch row's name and the tooz lock's.
NAME = 'nova-cell0-rebuild-pending'
LOCK_NAME = NAME.encode('ascii')
#: How often a standby tries the lock, and the leader renews its epoch.
ELECTION_SECONDS = 5
HEARTBEAT_SECONDS = 30
#: A heartbeat older than this: its copy is gone (three missed beats).
STALE_SECONDS = 3 * HEARTBEAT_SECONDS


def holder_of(host, pid):
    """How a copy names itself: ``host:pid``."""
    return '%s:%d' % (host, pid)


def _host(holder):
    return holder.rsplit(':', 1)[0]


class AnotherCopyRuns(Exception):
    """Without a coordination URL, a second copy refuses to start."""


class HeartbeatContended(Exception):
    """The heartbeat was refused while the epoch still names this copy.

    A write lost at each retry (Galera's certification, a lock wait
    timeout), not a deposition: dispatch nothing now, beat again soon.
    """


class Leadership(object):
    """This copy's part in electing the dispatcher.

    :param context: an admin context (the epoch row is ours).
    :param coordination_url: a tooz backend URL, or None for one copy.
    :param holder: names this copy in the epoch row and in tooz
        (:func:`holder_of`).
    """

    def __init__(self, context, coordination_url, holder, clock=None):
        self.context = context
        self.url = coordination_url
        self.holder = holder
        self.clock = clock or timeutils.utcnow
        self.epoch = None
        self._coordinator = None
        self._lock = None
        #: Whether this copy acquired the tooz lock (and has not released
        #: it): only then does stepping down release it. A standby that
        #: released a lock it never held would make tooz's redis driver
        #: log an ERROR at each of its stops.
        self._holding = False

    @property
    def leading(self):
        return self.epoch is not None

    def start(self):
        """Join the backend (tooz's heartbeat thread keeps the session)."""
        if self.url:
            coordinator = coordination.get_coordinator(
                self.url, self.holder.encode('utf-8'))
            coordinator.start(start_heart=True)
            # Only once started: stop() must not stop one that never was.
            self._coordinator = coordinator
            self._lock = coordinator.get_lock(LOCK_NAME)

    def stop(self):
        """Step down and leave the backend; safe to call twice."""
        self._step_down()
        if self._coordinator is not None:
            self._coordinator.stop()
            self._coordinator = None
            self._lock = None

    def elect(self):
        """Try to become the dispatcher, without waiting.

        :returns: the new epoch if this copy leads now (it took it), else
            None (another copy holds the lock).
        :raises: AnotherCopyRuns without a coordination URL, while another
            copy's heartbeat is fresh.
        """
        if self.leading:
            return self.epoch
        if self._lock is None:
            self._refuse_if_another_copy_beats()
        elif not self._lock.acquire(blocking=False):
            return None
        else:
            self._holding = True
        try:
            self.epoch = objects.PendingEpoch.take(
                self.context, NAME, self.holder, now=self.clock())
        except BaseException:
            # Not leading: a lock kept here would answer False to this
            # copy's next acquire, and to every other copy's, for ever.
            self._release()
            raise
        LOG.info('This copy (%s) dispatches waits for room, epoch %d',
                 self.holder, self.epoch)
        return self.epoch

    def renew(self):
        """Prove this copy still leads; before each dispatch and every
        :data:`HEARTBEAT_SECONDS`.

        :returns: False once deposed (a newer epoch was taken): this copy
            then steps down and must dispatch nothing more.
        """
        if not self.leading:
            return False
        if objects.PendingEpoch.heartbeat(self.context, NAME, self.epoch,
                                          now=self.clock()):
            return True
        current = objects.PendingEpoch.get(self.context, NAME)
        if current is not None and current.epoch == self.epoch:
            # Refused, not deposed (a node that has not applied a newer
            # epoch reads this one too: the next heartbeat tells).
            raise HeartbeatContended(self.epoch)
        LOG.warning('This copy (%s) was deposed: another copy took a newer '
                    'epoch than %d; it stops dispatching', self.holder,
                    self.epoch)
        self._step_down()
        return False

    def _step_down(self):
        self.epoch = None
        try:
            self._release()
        except coordination.ToozError:
            LOG.warning('Could not release the tooz lock %s',
                        LOCK_NAME, exc_info=True)

    def _release(self):
        """Release the tooz lock if this copy holds it."""
        if self._lock is not None and self._holding:
            self._holding = False
            self._lock.release()

    def _refuse_if_another_copy_beats(self):
        current = objects.PendingEpoch.get(self.context, NAME)
        if current is None or _host(current.holder) == _host(self.holder):
            # A restart on this host need not wait for its old process's
            # heartbeat to go stale: the new epoch deposes it, if alive.
            return
        age = self.clock() - current.heartbeat_at.replace(tzinfo=None)
        if age < datetime.timedelta(seconds=STALE_SECONDS):
            raise AnotherCopyRuns(_(
                'Another copy of nova-cell0-rebuild-pending (%(holder)s) '
                'beat %(age)d seconds ago, and [cell0_rebuild_pending] '
                'coordination_url is not set: set it to run several '
                'copies.') % {'holder': current.holder,
                              'age': age.total_seconds()})
