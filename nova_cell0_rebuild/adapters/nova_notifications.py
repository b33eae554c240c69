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

"""Adapter for Nova's versioned notifications, and what they name.

Our notifications travel on Nova's own notifier (``nova.rpc``): the same
transport, ``[notifications] notification_format`` and
``versioned_notifications_topics`` as Nova's, so a consumer of Nova's
versioned notifications receives ours with no change.
"""

from nova import exception as nova_exception
from nova import objects as nova_objects
from nova.objects import fields as nova_fields
from nova import rpc
from oslo_config import cfg
import oslo_messaging

CONF = cfg.CONF

#: The source Nova names in the publisher id of what nova-api sends.
API_SOURCE = nova_fields.NotificationSource.API

_VERSIONED_FORMATS = ('both', 'versioned')


def init(conf):
    """Set up Nova's messaging as Nova's command lines do (``rpc.init``).

    Its transports and notifiers; also registers ``transport_url``, which
    Nova reads whenever it loads a CellMapping. Nothing connects until a
    message is sent.
    """
    rpc.init(conf)


def versioned_enabled():
    """Whether Nova sends versioned notifications from this process.

    The test of ``nova.rpc.if_notifications_enabled``; also False where
    Nova's messaging was never set up (command lines, unit tests).
    """
    notifier = rpc.NOTIFIER
    return (notifier is not None and notifier.is_enabled() and
            CONF.notifications.notification_format in _VERSIONED_FORMATS)


def send(context, priority, event_type, payload, retry=None):
    """Send a versioned notification as nova-api on this host.

    :param priority: ``info`` or ``error``.
    :param payload: the payload as a primitive (``obj_to_primitive()``).
    :param retry: how many times the transport tries again after a
        failure; None keeps Nova's (``[oslo_messaging_notifications]
        retry``, for ever by default).
    """
    publisher_id = '%s:%s' % (API_SOURCE, CONF.host)
    if retry is not None and isinstance(rpc.NOTIFIER,
                                        oslo_messaging.Notifier):
        notifier = rpc.NOTIFIER.prepare(publisher_id=publisher_id,
                                        retry=retry)
    else:
        # Nova's harness replaces its notifier with one that takes no
        # retry (nova.tests.fixtures.NotificationFixture).
        notifier = rpc.get_versioned_notifier(publisher_id)
    getattr(notifier, priority)(context, event_type=event_type,
                                payload=payload)


def request_spec_id(context, instance_uuid):
    """The id of a server's RequestSpec, or None if it has none."""
    try:
        return nova_objects.RequestSpec.get_by_instance_uuid(
            context, instance_uuid).id
    except nova_exception.RequestSpecNotFound:
        return None


def versioned_topics(conf):
    """The topics Nova sends its versioned notifications on.

    ``[notifications] versioned_notifications_topics``, which Nova
    registers; default ``versioned_notifications``.
    """
    return list(conf.notifications.versioned_notifications_topics)
