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

"""Adapters: the only modules that call Nova's internals.

Each module is named for the part of Nova it adapts, so that a Nova upgrade
touches one place:

``nova_api``
    API microversions, request schemas, policy, views and faults.
``nova_compute``
    ``nova.compute.api``: loading a server, rebuild validation.
``nova_quota``
    whether the project may hold a buried server now, as a create checks.
``nova_build_requests``
    a moving server's BuildRequest and mapping, their undo, and the
    conductor cast.
``nova_cell0_rows``
    a server's rows in cell0: the claim, the hard delete, the burial again.
``nova_request_specs``
    what a create derives for the scheduler: RequestSpec, resource
    requests, the image of the build.
``nova_move_fields``
    what a move does with each field of the Nova objects it hands on.
``nova_servers``
    where a server lives: mappings, build requests, instances in cells.
``nova_deleted_servers``
    what archive would remove of a server deleted before it had a cell.
``nova_dropped_hand_offs``
    what the conductor leaves of a hand-off it dropped: instance rows in
    cells, the allocation its scheduler claimed.
``nova_cell0_listing``
    paging through cell0 with create-action request ids.
``nova_notifications``
    Nova's notifier and the RequestSpec id of a server.
``nova_paste``
    where nova-api's paste file is.
``nova_config``
    Nova's configuration start-up for our command lines.
``nova_service_context``
    a RequestContext of a service user, for ``manage rebuild``.
``nova_instance_history``
    a moved server's history in a cell: actions, events, faults, ec2 id.
``nova_release``
    what the installed Nova release offers, where releases differ.
``nova_private_calls``
    the list of Nova's private calls made here, checked on each release.
"""
