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

"""Pending without a Nova patch: buried servers that opted in wait for room.

Being built, step by step, after :doc:`/contributor/specs/pending`:
:mod:`.deadline` reads the opt-in's deadline and :mod:`.order` is the fair
order, both pure; :mod:`.leader` says which copy of the service
dispatches (a tooz lock and the epoch fence); :mod:`.intake` starts waits,
:mod:`.shapes` computes a server's placement query, :mod:`.dispatcher`
runs passes and :mod:`.settle` settles them, driven by calls;
:mod:`.events` reads Nova's notifications and :mod:`.service` drives the
dispatcher from them and from its timers (``cmd/pending.py`` runs it). Like
:mod:`nova_cell0_rebuild.relay`, this package sits on top, beside
:mod:`nova_cell0_rebuild.operations`, may import every layer below and is
never imported by nova-api's request path except for the pure modules.
"""
