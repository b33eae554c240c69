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

"""The create flow: record how a server create was made, then let Nova act.

The record is written *before* Nova handles ``POST /servers``, so that no
server can exist without the plugin knowing whether it was created with
personality files. Nova's answer then decides its fate, within the same
request: 202 completes it, anything else deletes it.
"""

from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.api import record_keeping
from nova_cell0_rebuild.api import wait_opt_in
from nova_cell0_rebuild import objects

LOG = logging.getLogger(__name__)


class RecordNotWritten(Exception):
    """The create record could not be written; Nova must not act."""


def _server_body(req):
    """Return the "server" object of a create body, or None if unreadable."""
    try:
        body = jsonutils.loads(req.body)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get('server'),
                                                    dict):
        return None
    return body['server']


def _personality_count(server):
    personality = server.get('personality')
    return len(personality) if isinstance(personality, list) else 0


def build_record(context, request_id, microversion, server, conf=None):
    """A pending CreateRecord for a create request; nothing is written.

    :param conf: the options; with them, the create's opt-in to waiting
        for room (metadata ``cell0_rebuild:wait``) is checked for the
        caller, now that the filter holds their token, and kept, honoured
        or with why not. Never refused: Nova's answer is Nova's.
    """
    opt_in = wait_opt_in.NONE
    if conf is not None:
        opt_in = wait_opt_in.at_create(context, conf, server,
                                       nova_api.authorize)
    return objects.CreateRecord(
        context,
        request_id=request_id,
        status=objects.fields.CreateRecordStatus.PENDING,
        project_id=context.project_id,
        user_id=context.user_id,
        microversion=microversion.get_string(),
        personality_files=_personality_count(server),
        requested_networks=server.get('networks'),
        requested_host=_text(server.get('host')),
        requested_hypervisor_hostname=_text(
            server.get('hypervisor_hostname')),
        wait_deadline=opt_in.raw,
        wait_refusal=opt_in.refusal)


def _text(value):
    # Nova's schema refuses anything else (fqdn, at most 255 characters):
    # the record must not fail before Nova answers 400 itself.
    if isinstance(value, str) and len(value) <= 255:
        return value
    return None


def _created(resp):
    """Return (instance_uuid, reservation_id) from Nova's 202 body."""
    try:
        body = jsonutils.loads(resp.body)
    except ValueError:
        return None, None
    if not isinstance(body, dict):
        return None, None
    server = body.get('server')
    if isinstance(server, dict):
        return server.get('id'), None
    return None, body.get('reservation_id')


def _creates_one(server):
    """Whether a create body asks for exactly one server."""
    counts = [server.get('min_count', 1), server.get('max_count', 1)]
    try:
        return all(int(count) == 1 for count in counts)
    except (TypeError, ValueError):
        return False


def complete(record, resp, single=False):
    """Complete the record after Nova accepted the create, in the request.

    One UPDATE for a one-server create: the instance uuid is in Nova's 202
    body. A multi-create also names the reservation its servers share and
    those of them not yet in a real cell, found with two indexed queries
    (:func:`record_keeping.waiting_servers`): whether the record
    is still needed is then one look-up by uuid, never a listing of the
    deployment's BuildRequests. Nothing is left to run after Nova's
    answer: the personality marker is written by the ``personality`` gate
    when it refuses the server, and ``purge`` deletes the record once
    every server landed in a real cell. Best effort: Nova has already
    created the server, so a failure is logged and never changes Nova's
    answer; the record stays pending and is found by the request id of the
    server's ``create`` action (purge completes it from there).
    """
    try:
        instance_uuid, reservation_id = _created(resp)
        if single:
            record.accept(instance_uuid=instance_uuid,
                          reservation_id=reservation_id)
            return
        reservation_id, server_uuids = record_keeping.waiting_servers(
            record._context.elevated(), record,
            reservation_id=reservation_id, first_uuid=instance_uuid)
        record.accept(instance_uuid=instance_uuid,
                      reservation_id=reservation_id,
                      server_uuids=server_uuids)
    except Exception:
        LOG.exception('Could not complete the create record of request %s',
                      record.request_id)


def _forget(record, status):
    """Delete the record of a create Nova did not make; never raises.

    Nova's own answer must reach the client whatever our database does: a
    record left behind is pending, names no server and is deleted by purge.
    """
    try:
        record.destroy()
    except Exception:
        LOG.exception('Could not delete the create record of request %s '
                      '(Nova answered %s); purge will remove it',
                      record.request_id, status)


def capture(req, application, context, request_id, microversion,
            conf=None):
    """Record a server create around Nova's handling of it.

    :returns: Nova's response, unchanged.
    """
    server = _server_body(req)
    if server is None:
        # Nova rejects what it cannot read; there is nothing to record.
        return req.get_response(application)

    record = build_record(context, request_id, microversion, server,
                          conf=conf)
    try:
        record.create()
    except Exception as exc:
        # Letting Nova create the server anyway could leave one created
        # with personality files that the plugin knows nothing about.
        raise RecordNotWritten() from exc
    try:
        resp = req.get_response(application)
    except Exception:
        _forget(record, 'with an exception')
        raise
    if resp.status_int == 202:
        complete(record, resp, single=_creates_one(server))
    else:
        _forget(record, resp.status_int)
    return resp
