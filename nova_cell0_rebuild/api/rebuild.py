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

"""The rebuild-from-cell0 flow: Nova's rebuild action for a cell0 server.

Handled here at a microversion of at least ``[cell0_rebuild]
min_microversion`` for a server mapped to cell0; everything else, including
every refusal Nova itself would give for other servers, is left to Nova.

The reaper path: below that threshold, from ``[cell0_rebuild]
reaper_min_microversion``, a caller that holds the reaper rule (besides
Nova's rebuild rule and ours) rebuilds a server in cell0 as at the
threshold, and a server that is not in cell0 is refused with 409 instead
of reaching Nova, so that a reaper's retry never re-images a server.
"""

import dataclasses
import typing as ty

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_serialization import jsonutils
import webob.exc

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.adapters import nova_build_requests
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.adapters import nova_request_specs
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.api import rebuild_refusals as refusals
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates
from nova_cell0_rebuild.gates import base as gates_base
from nova_cell0_rebuild.notifications import rebuild as notifications
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import move_journal
from nova_cell0_rebuild.policies import rebuild as rebuild_policies
from nova_cell0_rebuild.tasks import heal
from nova_cell0_rebuild.tasks import rebuild_from_cell0

LOG = logging.getLogger(__name__)

#: How many times a rebuild is tried from a fresh read of the server when
#: Nova accepted a write to it while it moved (a rename, a lock).
MOVE_ATTEMPTS = 3


@dataclasses.dataclass(frozen=True)
class Rebuilt:
    """What a rebuild did.

    :ivar prepared: the PreparedRebuild (its admin password is answered).
    :ivar build_request: the BuildRequest handed to the conductor, or None
        when the server was deleted while it moved.
    """

    prepared: ty.Any
    build_request: ty.Any = None


def action_body(req):
    """The body of an action request that names one action, or None.

    Bodies Nova cannot read (not JSON, not one key) are Nova's to refuse.
    Parsed once per request: the filter reads the rebuild and the actions
    it refuses during a move (api/build_request_actions) from it.
    """
    try:
        body = jsonutils.loads(req.body)
    except ValueError:
        return None
    if isinstance(body, dict) and len(body) == 1:
        return body
    return None


def rebuild_body(action):
    """The ``rebuild`` action body (from :func:`action_body`), or None."""
    if action is not None and 'rebuild' in action:
        return action
    return None


class RebuildFromCell0(object):
    """Answer a rebuild action for a server in cell0.

    :param gates: the loaded GateChain.
    :param min_version: APIVersionRequest from which it applies.
    :param reaper_min_version: APIVersionRequest from which it applies to
        a caller that holds the reaper rule; None: the threshold.
    """

    #: Builds the move; tests replace it to inject faults.
    task_factory = rebuild_from_cell0.RebuildFromCell0Task

    def __init__(self, conf, gates, min_version, reaper_min_version=None):
        self.conf = conf
        self.gates = gates
        self.min_version = min_version
        self.reaper_min_version = reaper_min_version or min_version

    @property
    def lease_seconds(self):
        return self.conf.cell0_rebuild.move_lease_seconds

    def wants(self, req, body, version, server_id):
        """The mapping of the server if the request is ours, or None.

        Ours: a server mapped to cell0, or one left unmapped by a move of
        ours that was interrupted (its lease expired), which is healed by
        :meth:`handle` once the caller is authorized. On the reaper path,
        every server Nova could rebuild (which :meth:`handle` refuses).
        Nothing is changed here.
        """
        context = req.environ.get('nova.context')
        if body is None or version is None or context is None:
            return None
        if version < self.reaper_min_version:
            return None
        admin = context.elevated()
        mapping = nova_servers.get_mapping(admin, server_id)
        if mapping is None:
            return None
        if version < self.min_version:
            return mapping if self._reaper_path(context, mapping) else None
        if nova_servers.is_cell0(mapping.cell_mapping):
            return mapping
        if mapping.cell_mapping is None and not mapping.queued_for_delete:
            # A BuildRequest: maybe a move of ours a crash interrupted.
            journal = objects.MoveJournal.get_by_instance_uuid(admin,
                                                               server_id)
            if journal is not None and journal.lease_expired(
                    self.lease_seconds):
                return mapping
        return None

    def _reaper_path(self, context, mapping):
        """Whether a rebuild below the threshold takes the reaper path.

        Only for a caller that holds the reaper rule and may rebuild the
        server (Nova's rule and ours); a server being deleted is left to
        Nova, which answers it as it answers everyone. The body is not
        looked at: it is validated first by :meth:`handle`, which then
        checks the rule its content calls for (trusted certificates), in
        Nova's order.
        """
        if mapping.queued_for_delete:
            return False
        try:
            target = nova_servers.policy_target(context, mapping)
        except exception.RequestRefused:
            return False  # another project's server: Nova's 404
        if not nova_api.allowed(
                context, rebuild_policies.REBUILD_FROM_CELL0_REAPER, target):
            return False
        try:
            self._authorize(context, target)
        except exception.RequestRefused:
            return False
        return True

    def handle(self, req, body, version, mapping, server_id):
        """Run the rebuild; returns Nova's 202 answer.

        In Nova's order: the body against Nova's schema, the server, the
        caller's rights on it, then the rebuild; nothing changes before the
        first three passed.

        :raises: RequestRefused, answered as a Nova-style fault.
        """
        context = req.environ['nova.context']
        nova_api.validate_rebuild_body(req, body, version)
        # Only now is the rebuild known to be an object.
        rebuild = body['rebuild']
        instance = self._find(context, mapping, server_id)
        self._authorize(context, nova_servers.policy_target(
            context, mapping) if instance is None else {
                'user_id': instance.user_id,
                'project_id': instance.project_id},
            trusted_certs='trusted_image_certificates' in rebuild)
        if mapping.cell_mapping is not None and instance is None:
            # The reaper path: Nova would rebuild (re-image) it.
            raise refusals.not_in_cell0(server_id)
        rebuilt = self.rebuild(context, instance, mapping, rebuild)
        try:
            return nova_api.rebuild_response(
                req, version, server_id, rebuilt.prepared.admin_password,
                build_request=rebuilt.build_request)
        except webob.exc.HTTPNotFound as gone:
            # Deleted while it moved: Nova's 404, as a fault in its JSON.
            raise exception.RequestRefused(404, gone.explanation)

    @staticmethod
    def _find(context, mapping, server_id):
        """The server's cell0 instance, as the caller's project sees it.

        :returns: None for a server in a real cell (the reaper path) or
            left unmapped by a move; its mapping is then the policy target.
        """
        if not nova_servers.is_cell0(mapping.cell_mapping):
            return None
        try:
            return nova_compute.get_server_in_cell(context, mapping)
        except exception.RequestRefused as refusal:
            raise refusals.refusal_after_race(context, server_id, refusal)

    @staticmethod
    def _authorize(context, target, trusted_certs=False):
        """The rules Nova's rebuild checks, in its order, then ours.

        :param trusted_certs: whether the (validated) rebuild gives trusted
            image certificates, for which Nova has a rule of its own.
        :raises: RequestRefused(403).
        """
        nova_api.authorize(context, nova_api.NOVA_REBUILD_RULE, target)
        if trusted_certs:
            nova_api.authorize(
                context, nova_api.NOVA_REBUILD_TRUSTED_CERTS_RULE, target)
        nova_api.authorize(context, rebuild_policies.REBUILD_FROM_CELL0,
                           target)

    def rebuild(self, context, instance, mapping, rebuild):
        """Rebuild an authorized server from cell0; the API and CLI path.

        Heals an interrupted move of the server first (the one way into
        heal of a rebuild), runs the gates, validates the rebuild as
        Nova's would and moves the server. When Nova accepted a write to
        the server while it moved, the move was undone with the write
        kept, and it is tried again from a fresh read (gates included: a
        lock that landed meanwhile refuses it).

        :param instance: the server's cell0 instance, or None when a move
            left it unmapped.
        :param rebuild: a rebuild object valid against Nova's schema.
        :returns: Rebuilt.
        :raises: RequestRefused (gates, validation, a concurrent move, a
            database error: see :func:`.rebuild_refusals.database_refusal`).
        """
        try:
            return self._rebuild(context, instance, mapping, rebuild)
        except (db_exc.DBDeadlock, db_exc.DBConnectionError) as error:
            raise refusals.database_refusal(mapping.instance_uuid, error)

    def _rebuild(self, context, instance, mapping, rebuild):
        server_id = mapping.instance_uuid
        journal = objects.MoveJournal.get_by_instance_uuid(
            context.elevated(), server_id)
        if journal is not None and journal.lease_expired(self.lease_seconds):
            instance, mapping = self._heal_then_reload(context, journal)
            journal = move_journal.UNREAD
        elif instance is None:
            raise refusals.in_progress(server_id)
        for attempt in range(1, MOVE_ATTEMPTS + 1):
            try:
                return self._rebuild_once(context, instance, mapping,
                                          rebuild, journal)
            except exception.ServerChangedDuringMove:
                if attempt == MOVE_ATTEMPTS:
                    raise
                LOG.info('Server %s changed while it moved out of cell0 '
                         '(attempt %d of %d): trying again from a fresh '
                         'read', server_id, attempt, MOVE_ATTEMPTS)
                instance = nova_compute.get_server_in_cell(context, mapping)
                journal = move_journal.UNREAD

    def _rebuild_once(self, context, instance, mapping, rebuild, journal):
        server_id = instance.uuid
        admin = context.elevated()
        server, bdms = gates_base.Cell0Server.load(context, instance,
                                                   mapping)
        try:
            self.gates.check(server, rebuild)
        except exception.GateRefused as refusal:
            refusal = refusals.refusal_after_race(context, server_id, refusal)
            notifications.notify_rebuild(
                context, notifications.REFUSED, server,
                image_uuid=rebuild['imageRef'], refusal=refusal)
            raise refusal
        prepared = nova_compute.prepare_rebuild(context, instance, bdms,
                                                rebuild)
        networks = nova_api.requested_networks(
            server.record.requested_networks if server.record else None)
        request_spec = nova_request_specs.get_request_spec(admin, server_id)
        if request_spec is None:
            raise exception.RequestRefused(409, _(
                'Instance %s has no RequestSpec: it cannot be scheduled '
                'again.') % server_id)
        task = self.task_factory(context, server, prepared, networks, bdms,
                                 request_spec, self.lease_seconds,
                                 journal=journal)
        with notifications.rebuild_notifications(
                context, server, prepared.image_id,
                request_spec_id=request_spec.id) as outcome:
            try:
                build_request = task.execute()
            except (nova_compute.UnexpectedTaskState,
                    nova_build_requests.MoveConflict,
                    rebuild_from_cell0.LeaseLost,
                    exception.MoveInProgress, exception.MoveInterrupted):
                raise refusals.in_progress(server_id)
            except rebuild_from_cell0.ChangedUnderneath:
                raise refusals.changed(server_id)
            outcome.server_deleted = build_request is None
        return Rebuilt(prepared, build_request)

    def _heal_then_reload(self, context, journal):
        """Heal an interrupted move of the server; (instance, mapping).

        :raises: RequestRefused: 404 when the server is gone, 409 when the
            move is alive, may have reached the conductor, or the server
            is no longer in cell0.
        """
        admin = context.elevated()
        server_id = journal.instance_uuid
        outcome = heal.heal_move(admin, journal, self.lease_seconds)
        if outcome in (heal.ALIVE, heal.CONTENDED, heal.LEFT_ALONE,
                       heal.TAKEN_OVER):
            raise refusals.in_progress(server_id)
        mapping = nova_servers.get_mapping(admin, server_id)
        refusals.require_in_cell0(mapping, server_id)
        return nova_compute.get_server_in_cell(context, mapping), mapping


def rebuild_as_admin(context, conf, server_id, image_ref=None):
    """Rebuild a server from cell0 for an operator (no HTTP, no policy).

    :param image_ref: the image to build from; by default the server's own
        (its volume's for a volume-backed server).
    :returns: the PreparedRebuild.
    :raises: RequestRefused, as the API would answer it: 404 for a server
        that does not exist or was deleted, 409 for one not in cell0.
    """
    admin = context.elevated()
    mapping = nova_servers.get_mapping(admin, server_id)
    refusals.require_in_cell0(mapping, server_id)
    instance = nova_compute.get_server_in_cell(admin, mapping)
    if image_ref is None:
        image_ref = nova_compute.original_image(
            admin, mapping.cell_mapping, instance)
    min_version = microversion_settings.check_min_microversion(
        conf.cell0_rebuild.min_microversion)
    handler = RebuildFromCell0(conf, gates.load_gates(conf), min_version)
    return handler.rebuild(admin, instance, mapping,
                           {'imageRef': image_ref}).prepared
