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

"""The one list of the functions where actors stop: the move's steps.

Each entry names a function by its dotted path, so that when a module is
split or renamed this file is the only one to change. An actor stops just
before the function runs (and, for ``after`` entries, once it returned).
A step point must never be inside a database transaction or inside Nova's
``target_cell`` (a paused actor would hold the transaction, or the lock
Nova's cell database fixture takes there, and every other actor would
wait; the explorer's watchdog reports it as stuck): the functions listed
are all called outside both.
"""

import functools

import fixtures

_ROWS = 'nova_cell0_rebuild.adapters.nova_cell0_rows.'
_BUILD_REQUESTS = 'nova_cell0_rebuild.adapters.nova_build_requests.'
_REQUEST_SPECS = 'nova_cell0_rebuild.adapters.nova_request_specs.'
_JOURNAL = 'nova_cell0_rebuild.objects.move_journal.MoveJournal.'
_WAIT = 'nova_cell0_rebuild.objects.cell0_wait.Cell0Wait.'
_EPOCH = 'nova_cell0_rebuild.objects.pending_epoch.PendingEpoch.'

#: (label, dotted name, also after the call): the label is what a
#: schedule's trace shows.
STEP_POINTS = [
    # The rebuild's forward path (tasks/rebuild_from_cell0.py).
    ('journal start', _JOURNAL + 'start', False),
    ('claim', _ROWS + 'claim', False),
    # Glance and Cinder (the image or volume), then Neutron (port resource
    # requests): the move writes nothing from here to the BuildRequest, so
    # one step point covers the window of these calls.
    ('glance/cinder/neutron', _REQUEST_SPECS + 'image_for_build', False),
    ('build request', _BUILD_REQUESTS + 'move_to_build_request', False),
    ('cell0 hard delete', _ROWS + 'destroy_cell0_instance', False),
    ('still pending', _BUILD_REQUESTS + 'still_pending', False),
    # The cast, made a call: the conductor's schedule_and_build_instances
    # runs while the move waits (nothing is written in between).
    ('conductor',
     'nova.conductor.manager.ComputeTaskManager.'
     'schedule_and_build_instances', False),
    ('journal finish', _JOURNAL + 'finish', False),
    # The undo (tasks/undo.py), by the rollback or by heal.
    ('undo release', _ROWS + 'release', False),
    ('undo move back', _BUILD_REQUESTS + 'move_back_to_cell0', False),
    ('undo bury again', 'nova_cell0_rebuild.tasks.server_history.'
     'bury_again', False),
    ('undo remap', _BUILD_REQUESTS +
     'remap_to_cell0_and_drop_build_request',
     False),
    # Heal (tasks/heal.py).
    ('heal take over', _JOURNAL + 'take_over', False),
    # DELETE through the filter (api/filter.py): Nova's delete, then ours.
    ('nova delete', 'nova.compute.api.API.delete', False),
    ('delete hook', 'nova_cell0_rebuild.api.record_keeping.forget_deleted',
     False),
    # nova-cell0-rebuild-manage purge (operations/purge.py).
    ('purge records', 'nova_cell0_rebuild.operations.purge.purge_records',
     False),
    ('purge journals',
     'nova_cell0_rebuild.operations.purge.purge_journals', False),
    ('purge stashes',
     'nova_cell0_rebuild.tasks.server_history.write_back_or_keep', False),
    # The pending service (pending/dispatcher.py, pending/settle.py): the
    # epoch's heartbeat before each dispatch (the fence), the wait's
    # compare-and-swaps that take it (the dispatcher) or end it (the
    # user's DELETE .../wait, a deadline), and the settle of a dispatch.
    ('epoch check', _EPOCH + 'heartbeat', False),
    ('wait dispatch', _WAIT + 'dispatch', False),
    ('wait end', _WAIT + 'end', False),
    ('settle', 'nova_cell0_rebuild.pending.settle.Settling.settle', False),
    # nova-manage db archive_deleted_rows is one step: it archives each
    # cell inside Nova's target_cell, where the harness serializes cells
    # with a lock, and an actor must not pause holding it.
]


#: The pending service's own step points; its actors run through the
#: others (MOVE), see pending_actors.py.
PENDING = ('epoch check', 'wait dispatch', 'wait end', 'settle')

#: Every other step point: a move's, heal's, a delete's, purge's.
MOVE = frozenset(label for label, _, _ in STEP_POINTS) - set(PENDING)


def _resolve(dotted):
    """(owner, attribute name, raw attribute) of a dotted name."""
    module_name, _, rest = dotted.partition('.')
    parts = dotted.split('.')
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = __import__('.'.join(parts[:split]),
                               fromlist=[parts[split]])
        except ImportError:
            continue
        for part in parts[split:-1]:
            owner = getattr(owner, part)
        name = parts[-1]
        raw = owner.__dict__[name] if name in getattr(
            owner, '__dict__', {}) else getattr(owner, name)
        return owner, name, raw
    raise ImportError(dotted)


def _wrap(step, label, raw, after):
    """*raw* wrapped to stop at *label* before (and after) each call."""
    kind = type(raw) if isinstance(raw, (classmethod, staticmethod)) else None
    real = raw.__func__ if kind else raw

    @functools.wraps(real)
    def stopping(*args, **kwargs):
        step(label)
        result = real(*args, **kwargs)
        if after:
            step(label + ' (after)')
        return result
    return kind(stopping) if kind else stopping


class StepPoints(fixtures.Fixture):
    """Wrap every function of :data:`STEP_POINTS` to call *step(label)*.

    :param step: the explorer's hook (``Explorer.step``).
    """

    def __init__(self, step, points=STEP_POINTS):
        super().__init__()
        self.step = step
        self.points = points

    def _setUp(self):
        for label, dotted, after in self.points:
            _, _, raw = _resolve(dotted)
            self.useFixture(fixtures.MonkeyPatch(
                dotted, _wrap(self.step, label, raw, after)))
