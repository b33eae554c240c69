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

"""Would a buried server fit now? Placement's answer, asked as Nova asks.

The pending dispatcher (issue 27) spends a rebuild only on a server that
placement has a candidate for. A server's *request shape* is the query
string (or two) Nova's scheduler would send for its create
(``nova/scheduler/manager.py`` ``select_destinations``), without
``limit``; servers of one shape share one query per pass. Everything
here mirrors the scheduler's own calls so that the question asked is the
one the scheduler will ask; nothing here writes.
"""

import dataclasses
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects as nova_objects
from nova.scheduler.client import report
from nova.scheduler import request_filter
from nova.scheduler import utils as scheduler_utils

from nova_cell0_rebuild.adapters import nova_request_specs as request_specs
from nova_cell0_rebuild import exception

CONF = nova.conf.CONF

#: Resource classes named first in a summary, in this order; the others
#: follow by name.
_SUMMARY_ORDER = ('PCPU', 'VCPU', 'MEMORY_MB', 'DISK_GB')


def completed_request_spec(context, instance, image, networks,
                           requested_host=None, requested_node=None):
    """The RequestSpec the move would hand the scheduler; never saved.

    As ``tasks/rebuild_from_cell0.py`` completes it: the stored spec,
    reset to a one-server create (``_move``), completed with what Nova
    does not store (``_cast``). Calls Neutron (port resource requests) and
    Cyborg (device profile), as the move does.

    :param context: an admin context (the dispatcher's service context).
    :param instance: the buried server (its flavor and uuid), from cell0.
    :param image: the image dict the server would be built from: for the
        move, ``nova_request_specs.image_for_build(context, bdms,
        prepared)``.
    :param networks: a fresh NetworkRequestList from the create record
        (``nova_api.requested_networks(record.requested_networks)``) or
        None; its requests get new ``pci_request_id`` values, so do not
        share it with a move.
    :param requested_host: the create record's ``requested_host``.
    :param requested_node: its ``requested_hypervisor_hostname``.
    :returns: the RequestSpec, or None when the server has none.
    """
    spec = request_specs.get_request_spec(context, instance.uuid)
    if spec is None:
        return None
    resources = request_specs.resource_requests(context, instance, image,
                                                networks)
    request_specs.reset_request_spec(spec, image, resources)
    return request_specs.complete_request_spec(
        spec, networks, resources, host=requested_host, node=requested_node)


class _ComputeNodes(object):
    """The one method of Nova's HostManager resources_from_request_spec
    calls (for a requested host or node), without the HostManager's
    caches of every host.
    """

    def get_compute_nodes_by_host_or_node(self, ctxt, host, node,
                                          cell=None):
        def lookup(cctxt):
            try:
                if host and node:
                    return nova_objects.ComputeNodeList(objects=[
                        nova_objects.ComputeNode.get_by_host_and_nodename(
                            cctxt, host, node)])
                if host:
                    return nova_objects.ComputeNodeList.get_all_by_host(
                        cctxt, host)
                return nova_objects.ComputeNodeList(objects=[
                    nova_objects.ComputeNode.get_by_nodename(cctxt, node)])
            except nova_exception.NotFound:
                return nova_objects.ComputeNodeList()

        cells = [cell] if cell else [
            mapping for mapping in
            nova_objects.CellMappingList.get_all(ctxt)
            if not mapping.is_cell0() and not mapping.disabled]
        found = nova_context.scatter_gather_cells(
            ctxt, cells, nova_context.CELL_TIMEOUT, lookup)
        return next(
            (nodes for nodes in found.values()
             if nodes and not nova_context.is_cell_failure_sentinel(nodes)),
            nova_objects.ComputeNodeList())


def _without_limit(query):
    """A query string of ResourceRequest.to_querystring without limit.

    It is ``urlencode`` of pairs: ``&`` never occurs inside one.
    """
    return '&'.join(part for part in query.split('&')
                    if part and not part.startswith('limit='))


def request_shape(context, request_spec):
    """The allocation candidate query string(s) the scheduler would send.

    On a copy of *request_spec* (already completed, see
    :func:`completed_request_spec`), as ``select_destinations`` does for a
    create: the request filters, the ResourceRequest with CPU pinning
    translated to PCPU and, when pinning is requested and
    ``[workarounds] disable_fallback_pcpu_query`` is off, the VCPU
    fallback query as a second string.

    :returns: a tuple of one or two query strings, without ``limit``.
    :raises: NoCandidatePossible when a request filter refuses the server
        (the scheduler's NoValidHost) or its requested host is unknown.
    """
    spec = request_spec.obj_clone()
    nodes = _ComputeNodes()
    try:
        request_filter.process_reqspec(context, spec)
        resources = scheduler_utils.resources_from_request_spec(
            context, spec, nodes, enable_pinning_translate=True)
        queries = [_without_limit(resources.to_querystring())]
        if (resources.cpu_pinning_requested
                and not CONF.workarounds.disable_fallback_pcpu_query):
            fallback = scheduler_utils.resources_from_request_spec(
                context, spec, nodes, enable_pinning_translate=False)
            queries.append(_without_limit(fallback.to_querystring()))
    except (nova_exception.RequestFilterFailed,
            nova_exception.NoValidHost) as refused:
        raise exception.NoCandidatePossible(reason=refused.format_message())
    return tuple(queries)


@dataclasses.dataclass(frozen=True)
class Candidates(object):
    """Placement's answer for one shape.

    :ivar fits: placement returned at least one allocation request.
    :ivar room: how many servers of the shape may fit (an estimate, see
        :func:`room`); 0 when it does not fit.
    :ivar summary: why not, for ``last_reason``; '' when it fits.
    """

    fits: bool
    room: int
    summary: str


def candidates(context, queries, limit):
    """Ask placement for candidates of a shape: one GET per query string.

    At placement microversion 1.36 (``SAME_SUBTREE_VERSION``, as the
    scheduler), through Nova's SchedulerReportClient. The queries are
    asked in order and the first with a candidate answers: the fallback
    query of a PCPU shape is only sent when the PCPU one has none.

    A query placement refuses with 400 has no candidate, as for the
    scheduler (its ``get_allocation_candidates`` answers None, then
    NoValidHost): placement refuses a trait it does not know ("No such
    trait(s)"), which a compute may still report later; the summary
    quotes placement's reason.

    :param queries: the shape, from :func:`request_shape`.
    :param limit: the ``limit`` of each query (>= 1).
    :raises: PlacementUnavailable when placement cannot be reached or
        answers another error: never taken for "fits" nor for "no
        candidate".
    """
    if limit < 1:
        raise ValueError('limit must be at least 1, not %r' % limit)
    refusals = []
    for query in queries:
        answer = _get_candidates(context, query, limit)
        if isinstance(answer, str):
            refusals.append(answer)
        elif answer['allocation_requests']:
            return Candidates(True, room(answer, _unsuffixed(query)[0]),
                              '')
    text = summary(queries[0])
    if refusals:
        text += ' (placement: %s)' % refusals[0]
    return Candidates(False, 0, text)


def _get_candidates(context, query, limit):
    """Placement's answer to one query; for a 400, its reason."""
    url = '/allocation_candidates?%s' % '&'.join(
        part for part in (query, 'limit=%d' % limit) if part)
    try:
        response = report.report_client_singleton().get(
            url, version=report.SAME_SUBTREE_VERSION,
            global_request_id=context.global_id)
    except ks_exc.ClientException as error:
        raise exception.PlacementUnavailable(reason=str(error))
    if response is not None and response.status_code == 400:
        return _reason(response)
    if response is None or response.status_code != 200:
        raise exception.PlacementUnavailable(reason='%s %s' % (
            getattr(response, 'status_code', 'no answer'),
            getattr(response, 'text', '')))
    try:
        answer = response.json()
    except ValueError as error:
        raise exception.PlacementUnavailable(
            reason='unexpected answer: %s' % error)
    if not (isinstance(answer, dict)
            and isinstance(answer.get('allocation_requests'), list)
            and isinstance(answer.get('provider_summaries'), dict)):
        raise exception.PlacementUnavailable(
            reason='unexpected answer: %.200s' % response.text)
    return answer


def _reason(response):
    """The last line of placement's error detail (its first line is
    webob's generic text), or its body.
    """
    try:
        detail = response.json()['errors'][0]['detail']
    except (ValueError, KeyError, IndexError, TypeError):
        detail = response.text
    lines = [line.strip() for line in str(detail).splitlines()
             if line.strip()]
    return lines[-1][:200] if lines else 'refused (400)'


def _unsuffixed(query):
    """The unsuffixed group of a query: ({class: amount}, [traits])."""
    amounts, traits = {}, []
    for key, value in parse.parse_qsl(query):
        if key == 'resources':
            for item in value.split(','):
                name, amount = item.split(':')
                amounts[name] = int(amount)
        elif key == 'required' and value.startswith('in:'):
            # Any of these traits (1.39 and later; kept for completeness).
            traits.append('|'.join(value[3:].split(',')))
        elif key == 'required':
            traits.extend(trait for trait in value.split(',')
                          if not trait.startswith('!'))
    return amounts, traits


def room(answer, amounts):
    """How many servers of a shape the candidates' hosts may take.

    Over the distinct root providers of the allocation requests: the sum
    of ``min`` over *amounts* (the unsuffixed group's resource classes) of
    ``floor(free / amount)``, with ``free = capacity - used`` summed over
    the root's tree in ``provider_summaries``; at least 1 per root (it is
    a candidate). An estimate: placement's filters are not Nova's, and
    ``limit`` samples the roots.
    """
    summaries = answer['provider_summaries']
    roots = {summaries.get(provider, {}).get('root_provider_uuid', provider)
             for request in answer['allocation_requests']
             for provider in request['allocations']}
    total = 0
    for root in roots:
        tree = [provider for uuid, provider in summaries.items()
                if provider.get('root_provider_uuid', uuid) == root]
        counts = []
        for name, amount in amounts.items():
            free = sum(
                provider['resources'][name]['capacity']
                - provider['resources'][name]['used']
                for provider in tree if name in provider.get('resources', {}))
            counts.append(int(free // amount) if amount > 0 else 1)
        total += max(1, min(counts)) if counts else 1
    return total


def summary(query):
    """``last_reason`` for a shape placement has no candidate for.

    Names the unsuffixed group's resources and required traits (placement
    does not say which constraint failed).
    """
    amounts, traits = _unsuffixed(query)

    def order(name):
        known = name in _SUMMARY_ORDER
        return (not known, _SUMMARY_ORDER.index(name) if known else 0, name)
    text = 'placement has no candidate for %s' % (','.join(
        '%s=%d' % (name, amounts[name]) for name in sorted(amounts, key=order))
        or 'the request')
    if traits:
        text += ' with %s' % ','.join(traits)
    return text
