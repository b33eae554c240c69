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

"""What the installed Nova offers, where supported releases differ.

The plugin supports Nova 29 (2024.1) to Nova 34 (2026.2). Where those
releases differ in something the plugin uses, this module looks at the
installed Nova itself (never at its version number) and answers for it, so
that no other module checks a release. The other adapters ask here.

Every private Nova call the adapters make, with the shapes it has on the
supported releases, is listed in :mod:`.nova_private_calls`; a unit test
checks each on the installed Nova.
"""

import functools
import inspect

# Nova is imported inside the functions: patch_eventlet runs before
# anything of Nova but nova.monkey_patch may be imported.


@functools.lru_cache(maxsize=None)
def _takes(function, parameter):
    return parameter in inspect.signature(function).parameters


def patch_eventlet():
    """Monkey-patch the standard library for eventlet, as Nova's services do.

    Nova 32 and newer patch when ``nova.monkey_patch.patch()`` is called;
    older releases patch when ``nova.monkey_patch`` is imported. Both honour
    ``OS_NOVA_DISABLE_EVENTLET_PATCHING``.
    """
    from nova import monkey_patch
    patch = getattr(monkey_patch, 'patch', None)
    if patch is not None:
        patch()


def parse_args_takes_prog():
    """Whether ``nova.config.parse_args`` takes ``prog`` (Nova 33 and newer).

    Older releases name the program after ``sys.argv[0]``, as oslo.config
    does by default.
    """
    from nova import config as nova_config
    return _takes(nova_config.parse_args, 'prog')


class _DecoratorSchemas(object):
    """Nova 31 and older: the schemas of ``@validation.schema`` closures.

    Those releases keep no table of a method's request schemas; each
    ``validation.schema`` decorator closes over its schema and its version
    range. They are collected once, by walking the decorator chain.
    """

    def __init__(self, method):
        from nova.api.openstack import api_version_request
        self._schemas = []
        seen = set()
        func = method
        while func is not None and id(func) not in seen:
            seen.add(id(func))
            free = inspect.getclosurevars(func).nonlocals
            if 'request_body_schema' in free and 'min_version' in free:
                self._schemas.append((
                    free['request_body_schema'],
                    api_version_request.APIVersionRequest(
                        free['min_version']),
                    api_version_request.APIVersionRequest(
                        free['max_version'])))
            func = getattr(func, '__wrapped__', None) or free.get('func')
        if not self._schemas:
            raise RuntimeError('no request schema was found on %r' % method)

    def __call__(self, req):
        version = req.api_version_request
        for schema, lowest, highest in self._schemas:
            if version.matches(lowest, highest):
                return schema
        return None


@functools.lru_cache(maxsize=None)
def rebuild_request_schemas():
    """A callable giving Nova's rebuild body schema for a Nova request.

    Nova 33 and newer keep the table on ``ServersController._rebuild``,
    Nova 32 on ``_action_rebuild``; older releases keep none (see
    :class:`_DecoratorSchemas`).
    """
    from nova.api.openstack.compute import servers as servers_api
    controller = servers_api.ServersController
    method = getattr(controller, '_rebuild', None)
    if method is None:
        method = controller._action_rebuild
    table = getattr(method, 'request_body_schemas', None)
    return table if table is not None else _DecoratorSchemas(method)


def checks_take_min_compute():
    """Whether ``API._checks_for_create_and_rebuild`` takes the minimum
    nova-compute version (Nova 31 and newer); older releases read it
    themselves where they need it.
    """
    from nova.compute import api as compute_api
    return _takes(compute_api.API._checks_for_create_and_rebuild,
                  'min_comp_ver')


def unified_limits_count_request_spec():
    """Whether unified limits are enforced from a RequestSpec (Nova 34).

    Nova 34 counts every resource a RequestSpec asks for
    (``enforce_num_instances_and_resources``); older releases count a
    flavor's (``enforce_num_instances_and_flavor``).
    """
    from nova.limit import placement as placement_limits
    return hasattr(placement_limits, 'enforce_num_instances_and_resources')
