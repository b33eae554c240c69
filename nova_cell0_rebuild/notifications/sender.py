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

"""Sending notifications in order, off the request that waits for them.

With the rabbit driver a publish waits for the broker's confirm, and a
broker that hangs holds it for the socket timeout (60 s, the heartbeat
threshold) and as long again for each reconnection: no retry setting alone
bounds that. So one sender thread per process sends, in order, and a request
waits for its notification only a bounded time.
"""

import os
import queue
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Notifications that may wait for the sender; more are dropped (logged).
BACKLOG = 100


class BackgroundSender(object):
    """One thread that runs the sends it is given, in order."""

    def __init__(self, backlog=BACKLOG):
        self._backlog = backlog
        self._lock = threading.Lock()
        self._pid = None
        self._queue = None
        self._late = None
        self._last = None

    def _started(self):
        """The queue of the running sender, started in this process."""
        with self._lock:
            if self._pid != os.getpid():
                # Not yet, or forked (uwsgi workers): a thread of its own.
                self._queue = queue.Queue(maxsize=self._backlog)
                self._pid = os.getpid()
                self._late = None
                threading.Thread(target=self._run, args=(self._queue,),
                                 name='cell0-rebuild-notifications',
                                 daemon=True).start()
            return self._queue

    @staticmethod
    def _run(sends):
        while True:
            send, done = sends.get()
            try:
                send()
            except Exception:
                LOG.exception('A notification could not be sent')
            finally:
                done.set()

    def submit(self, send, timeout, what):
        """Have *send* called by the sender; wait for it *timeout* s at most.

        While the sender is still held up by a send a caller stopped
        waiting for, callers do not wait at all.

        :param send: a callable that sends one notification and logs its
            own failure.
        :param what: names the notification in logs.
        :returns: whether it was sent (or given up) in time.
        """
        done = threading.Event()
        sends = self._started()
        try:
            sends.put_nowait((send, done))
        except queue.Full:
            LOG.warning('Dropped the %s notification: %d notifications '
                        'wait for the notification transport already',
                        what, self._backlog)
            return False
        self._last = done
        late = self._late
        if late is not None and not late.is_set():
            timeout = 0
        if done.wait(timeout):
            return True
        self._late = done
        LOG.warning('The %s notification was not sent within %s s; it is '
                    'sent in the background', what, timeout)
        return False

    def wait_until_idle(self, timeout):
        """Wait until every notification submitted so far was handled.

        :returns: False if that took longer than *timeout* seconds.
        """
        last = self._last
        return last is None or last.wait(timeout)


#: The sender of this process.
SENDER = BackgroundSender()
