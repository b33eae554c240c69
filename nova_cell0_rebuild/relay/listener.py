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

"""The relay on oslo.messaging: listen to Nova, publish for Aardvark.

The listener takes Nova's ``compute_task.build_instances.error`` from
Nova's versioned notification topics, in a pool of its own (so it takes
nothing away from other consumers), and acknowledges a notification once
it is announced or judged not worth announcing. A database that cannot be
reached asks for the notification again, after a pause, as oslo.messaging
listeners do (``NotificationResult.REQUEUE``).

A notification is acknowledged on the connection it came on. When RabbitMQ
closes that connection while the burial is announced (a broker restart, a
failover), it delivers the notification again as soon as the listener is
back, often before the first announcement is finished; the relay keeps the
message ids it announced, so that Aardvark, which deletes pre-emptible
servers for each announcement, is told once. Across relays of a pool and
restarts, a ledger in the plugin's database (relay/ledger.py) is claimed
before announcing: a notification delivered again to another relay, or to
a restarted one, once announced, is not announced again; one that a relay
holds is asked for again until that relay settles it or its lease runs
out.
"""

import collections
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging
import oslo_messaging

from nova_cell0_rebuild.relay import aardvark_events
from nova_cell0_rebuild.relay import burials

LOG = logging.getLogger(__name__)

PUBLISHER = 'nova-cell0-rebuild-aardvark-relay'
#: Database errors that go away by themselves: the notification is kept.
TRANSIENT_ERRORS = (db_exc.DBConnectionError, db_exc.DBDeadlock)
#: Seconds to wait before a requeued notification comes back.
REQUEUE_PAUSE = 1.0
#: How many announced notifications are remembered: a notification is
#: delivered again within seconds of a lost connection.
REMEMBERED = 1000


class Announcer(object):
    """Publishes a burial as the events of one Aardvark version.

    :param notifier: an oslo.messaging Notifier on Aardvark's topics.
    :param version: ``all_in_one`` or ``master``.
    :param delay: seconds between the scheduling event and the update.
    """

    def __init__(self, notifier, version, delay, sleep=time.sleep):
        self.notifier = notifier
        self.version = version
        self.delay = delay
        self._sleep = sleep

    def __call__(self, burial):
        events = aardvark_events.events_for(self.version, burial)
        for index, event in enumerate(events):
            if index and self.delay:
                self._sleep(self.delay)
            getattr(self.notifier, event.priority)(
                {}, event.event_type, event.payload)


class BurialEndpoint(object):
    """The notification endpoint: Nova's burial in, Aardvark's events out.

    :param judge: called with a :class:`.burials.Notice`; returns the
        Burial to announce or raises NotAnnounced.
    :param announce: called with that Burial.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^%s$' % burials.EVENT_TYPE.replace('.', r'\.'))

    def __init__(self, judge, announce, requeue_pause=REQUEUE_PAUSE,
                 ledger=None):
        self._judge = judge
        self._announce = announce
        self._ledger = ledger
        self._requeue_pause = requeue_pause
        self._announced = collections.OrderedDict()
        self._lock = threading.Lock()

    def _first_delivery(self, message_id):
        """Whether this notification is not announced (nor being) yet.

        Records it as announced: one of two deliveries judged at once
        announces.
        """
        if message_id is None:
            return True
        with self._lock:
            if message_id in self._announced:
                return False
            self._announced[message_id] = True
            while len(self._announced) > REMEMBERED:
                self._announced.popitem(last=False)
            return True

    def _forget(self, message_id):
        """Not announced after all: a delivery again must be judged."""
        with self._lock:
            self._announced.pop(message_id, None)

    def _requeue(self):
        time.sleep(self._requeue_pause)
        return oslo_messaging.NotificationResult.REQUEUE

    def _claim(self, uuid, message_id):
        """Claim the burial in the ledger: (go on?, result if not, claim).
        """
        if self._ledger is None or message_id is None:
            return True, None, None
        try:
            outcome, claim = self._ledger.claim(uuid, message_id)
        except TRANSIENT_ERRORS as exc:
            self._forget(message_id)
            LOG.warning('Burial of server %s in cell0 not claimed, the '
                        'notification is asked for again: %s', uuid, exc)
            return False, self._requeue(), None
        if outcome == self._ledger.ANNOUNCED:
            LOG.info('Burial of server %s in cell0 announced already (by '
                     'this relay or another): not announced twice', uuid)
            return False, oslo_messaging.NotificationResult.HANDLED, None
        if outcome == self._ledger.HELD:
            self._forget(message_id)
            LOG.info('Burial of server %s in cell0 is being announced by '
                     'another relay: asked for again until it is announced '
                     'or its lease runs out', uuid)
            return False, self._requeue(), None
        if outcome == self._ledger.TAKEN_OVER:
            LOG.warning('Burial of server %s in cell0: the relay announcing '
                        'it stopped (its lease ran out); announced again',
                        uuid)
        return True, None, claim

    def _settle(self, uuid, claim):
        if claim is None:
            return
        try:
            if not self._ledger.announced(claim):
                LOG.warning('Burial of server %s in cell0 announced after '
                            'this relay\'s lease ran out: another relay may '
                            'announce it too', uuid)
        except Exception:
            # Acknowledged anyway: asked for again, it would be announced
            # again once the lease runs out.
            LOG.exception('Burial of server %s in cell0 announced, but not '
                          'recorded as announced', uuid)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        uuid = '(unknown)'
        try:
            notice = burials.read_notice(payload)
            uuid = notice.instance_uuid
            burial = self._judge(notice)
        except burials.NotAnnounced as why:
            LOG.info('Burial of server %s in cell0 not announced to '
                     'Aardvark: %s', uuid, why)
            return oslo_messaging.NotificationResult.HANDLED
        except TRANSIENT_ERRORS as exc:
            LOG.warning('Burial of server %s in cell0 not judged, the '
                        'notification is asked for again: %s', uuid, exc)
            return self._requeue()
        except Exception:
            # Asking again for a notification that fails each time would
            # loop for ever: it is dropped, and said so.
            LOG.exception('Burial of server %s in cell0 not announced to '
                          'Aardvark: judging it failed', uuid)
            return oslo_messaging.NotificationResult.HANDLED
        message_id = (metadata or {}).get('message_id')
        if not self._first_delivery(message_id):
            LOG.info('Burial of server %s in cell0 delivered again while '
                     'it was announced, or after: not announced twice',
                     uuid)
            return oslo_messaging.NotificationResult.HANDLED
        go_on, result, claim = self._claim(uuid, message_id)
        if not go_on:
            return result
        self._announce(burial)
        self._settle(uuid, claim)
        LOG.info('Burial of server %s in cell0 announced to Aardvark '
                 '(request spec %s)', uuid, burial.request_spec_id)
        return oslo_messaging.NotificationResult.HANDLED


def notifier(transport, topics, host):
    """The Notifier that publishes Aardvark's events."""
    return oslo_messaging.Notifier(
        transport, publisher_id='%s:%s' % (PUBLISHER, host),
        driver='messagingv2', topics=list(topics))


class Relay(object):
    """The listener, started and stopped as one.

    :param transport: the notification transport Nova publishes on.
    :param topics: Nova's versioned notification topics.
    :param pool: the listener pool.
    :param transports: cleaned up once the listener stopped (its own and
        the notifier's).
    """

    def __init__(self, transport, topics, endpoint, pool, transports=()):
        self._transports = list(transports)
        targets = [oslo_messaging.Target(topic=topic) for topic in topics]
        self._listener = oslo_messaging.get_notification_listener(
            transport, targets, [endpoint], executor='threading', pool=pool,
            allow_requeue=True)

    def start(self):
        self._listener.start()

    def stop(self):
        """Stop taking notifications, finish those in hand."""
        self._listener.stop()
        self._listener.wait()
        for transport in self._transports:
            transport.cleanup()
