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

"""Request contexts that carry the request's own id, as in nova-api."""

import fixtures
from nova.api import auth as nova_auth


class RequestIdsAsInNovaApi(fixtures.Fixture):
    """Give each request context the id of its request.

    nova-api's ``keystonecontext`` builds the context from the request
    environment, so ``context.request_id`` is the ``openstack.request_id``
    answered as ``x-openstack-request-id`` and stored as the request id of
    a server's ``create`` action. Nova's harness replaces that with a
    context of its own and a fresh request id; this puts the request's
    back. Use it after ``OSAPIFixture``.
    """

    def _setUp(self):
        harness_context = nova_auth.NovaKeystoneContext._create_context

        def create_context(env, **kwargs):
            return harness_context(
                env, request_id=env['openstack.request_id'], **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context',
            create_context))
