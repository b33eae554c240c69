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

"""A listener of the cloud's versioned notifications, for a scenario.

It reads them from the minicloud's RabbitMQ as any consumer does: in a
pool of its own (its own queue, so that it takes nothing from Nova's
consumers or from the pending service's pool), with the transport
options of ``nova.conf`` (quorum queues: Nova's exchange is durable).
"""

import datetime
import os
import subprocess
import threading
import time

from oslo_config import cfg
import oslo_messaging

#: Nova's [notifications] versioned_notifications_topics.
TOPIC = 'versioned_notifications'
#: Nova's control_exchange (nova.rpc's default): a ConfigOpts of our own
#: would say "openstack", where Nova sends nothing.
EXCHANGE = 'nova'
RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl'


class Notification(object):

    def __init__(self, event_type, payload, metadata):
        self.event_type = event_type
        self.data = payload.get('nova_object.data', {})
        #: When the sender sent it (UTC, the machine's clock).
        self.sent_at = datetime.datetime.fromisoformat(
            metadata['timestamp']).replace(
                tzinfo=datetime.timezone.utc).timestamp()

    @property
    def uuid(self):
        return self.data.get('instance_uuid') or self.data.get('uuid')

    def __repr__(self):
        return '<%s %s %s>' % (self.event_type, self.uuid, self.sent_at)


class Watcher(object):
    """Versioned notifications received since :meth:`start`."""

    def __init__(self, description, pool):
        self.description = description
        self.pool = pool
        self.received = []
        self._lock = threading.Lock()
        conf = cfg.ConfigOpts()
        conf([], project='nova', default_config_files=[
            description['nova_conf']])
        self.transport = oslo_messaging.get_notification_transport(conf)
        self.listener = oslo_messaging.get_notification_listener(
            self.transport,
            [oslo_messaging.Target(topic=TOPIC, exchange=EXCHANGE)],
            [self], executor='threading', pool=pool)

    def start(self):
        """Listen, in a new queue: none left by a run that died."""
        self._delete_queue()
        self.listener.start()

    def stop(self):
        """Stop listening and delete the pool's queue (nobody reads it)."""
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()
        self._delete_queue()

    def _delete_queue(self):
        rabbitmq = self.description['rabbitmq']
        subprocess.run([RABBITMQCTL, '-n', rabbitmq['nodename'],
                        'delete_queue', self.pool],
                       capture_output=True, timeout=60,
                       env=dict(os.environ, **rabbitmq['env']))

    def _record(self, event_type, payload, metadata):
        with self._lock:
            self.received.append(Notification(event_type, payload, metadata))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record(event_type, payload, metadata)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record(event_type, payload, metadata)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record(event_type, payload, metadata)

    def of(self, event_type, uuid=None):
        """The notifications of a type (of one server), oldest first."""
        with self._lock:
            return [n for n in self.received if n.event_type == event_type
                    and (uuid is None or n.uuid == uuid)]

    def wait_for(self, event_type, uuid=None, count=1, timeout=60):
        """Poll until *count* such notifications came; :returns: them.

        :raises: AssertionError after *timeout* seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = self.of(event_type, uuid)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError('%d %s of %s after %ss (got %s)' % (
                    count, event_type, uuid or 'any server', timeout,
                    found))
            time.sleep(0.05)


def utc_seconds(text):
    """Seconds since the epoch of a payload's DateTimeField."""
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')) \
        .astimezone(datetime.timezone.utc).timestamp()
