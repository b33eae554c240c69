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
servers for each announcement, is told once. A relay that dies between
announcing and acknowledging announces again when it restarts.
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

    def __init__(self, judge, announce, requeue_pause=REQUEUE_PAUSE):
        self._judge = judge
        self._announce = announce
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
            time.sleep(self._requeue_pause)
            return oslo_messaging.NotificationResult.REQUEUE
        except Exception:
            # Asking again for a notification that fails each time would
            # loop for ever: it is dropped, and said so.
            LOG.exception('Burial of server %s in cell0 not announced to '
                          'Aardvark: judging it failed', uuid)
            return oslo_messaging.NotificationResult.HANDLED
        if not self._first_delivery((metadata or {}).get('message_id')):
            LOG.info('Burial of server %s in cell0 delivered again while '
                     'it was announced, or after: not announced twice',
                     uuid)
            return oslo_messaging.NotificationResult.HANDLED
        self._announce(burial)
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
