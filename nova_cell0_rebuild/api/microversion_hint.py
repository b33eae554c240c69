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

"""Nova's 409 for a rebuild below the threshold, with the way out named.

A member who rebuilds a server buried in cell0 at a client's default
microversion, below ``[cell0_rebuild] min_microversion``, is answered by
Nova: ``409 Cannot 'rebuild' instance ... while it is in vm_state error``.
When a rebuild at the threshold would be the plugin's (the server is in
cell0, the caller holds the rules of a rebuild from cell0 for it, and the
gates let it through), the answer keeps Nova's status and fault but its
message goes on to name the microversion to send and the user guide's page.
Any other answer is Nova's, unchanged; so is this one when anything needed
to decide cannot be read (the hint is a courtesy, never a new failure).
"""

from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.adapters import nova_servers
from nova_cell0_rebuild import exception
from nova_cell0_rebuild.operations import inventory
from nova_cell0_rebuild.policies import rebuild as rebuild_policies

LOG = logging.getLogger(__name__)

#: The user guide's page on rebuilding a server buried in cell0.
DOCS_PAGE = ('"Rebuilding a server that failed to schedule" '
             '(user/rebuild-from-cell0) in the nova-cell0-rebuild '
             'documentation')

HINT = _('This server is in cell0 and can be rebuilt from cell0, keeping '
         'its UUID, at compute API microversion %(mv)s or later '
         '(OpenStack-API-Version: compute %(mv)s; openstack '
         '--os-compute-api-version %(mv)s server rebuild): see %(page)s.')


def hint(threshold):
    """The sentence added to Nova's message, for *threshold* (``2.N``)."""
    return HINT % {'mv': threshold, 'page': DOCS_PAGE}


class MicroversionHint(object):
    """Adds the hint to Nova's 409 where a higher microversion would do.

    :param conf: the ConfigOpts with ``[cell0_rebuild]``.
    :param gates: the loaded GateChain.
    :param min_version: the threshold, an APIVersionRequest.
    """

    def __init__(self, conf, gates, min_version):
        self.conf = conf
        self.gates = gates
        self.min_version = min_version

    @property
    def lease_seconds(self):
        return self.conf.cell0_rebuild.move_lease_seconds

    def amend(self, req, version, server_id, response):
        """Nova's *response* to a rebuild, with the hint if it applies."""
        if (response.status_int != 409 or version is None or
                not version < self.min_version):
            return response
        context = req.environ.get('nova.context')
        if context is None:
            return response
        try:
            if not self._rebuildable_at_threshold(context, server_id):
                return response
            return self._with_hint(response)
        except Exception:
            # Nova's answer stands; the hint is not worth a 500.
            LOG.warning('No microversion hint for the rebuild of %s',
                        server_id, exc_info=True)
            return response

    def _rebuildable_at_threshold(self, context, server_id):
        mapping = nova_servers.get_mapping(context.elevated(), server_id)
        if (mapping is None or mapping.queued_for_delete or
                not nova_servers.is_cell0(mapping.cell_mapping)):
            return False
        try:
            target = nova_servers.policy_target(context, mapping)
        except exception.RequestRefused:
            return False
        for rule in (nova_api.NOVA_REBUILD_RULE,
                     rebuild_policies.REBUILD_FROM_CELL0):
            if not nova_api.allowed(context, rule, target):
                return False
        found = inventory.cell0_server(
            context, self.gates, mapping, judge_context=context,
            lease_seconds=self.lease_seconds)
        return found is not None and found[0]['rebuildable']

    def _with_hint(self, response):
        body = jsonutils.loads(response.body)
        (kind, fault), = body.items()
        fault['message'] = '%s %s' % (
            fault['message'].rstrip(), hint(self.min_version.get_string()))
        response.body = jsonutils.dump_as_bytes(body)
        return response
