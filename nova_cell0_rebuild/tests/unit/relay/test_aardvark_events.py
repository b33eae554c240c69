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

"""The events of each Aardvark version, read as Aardvark reads them.

Each reader below follows the lookups of the Aardvark function it names
(github.com/ttsiouts/aardvark, branches all_in_one and master), so a field
renamed or moved here fails a test.
"""

import testtools

from nova_cell0_rebuild.relay import aardvark_events as events

UUID = '3f1d2c4b-5a69-4788-9a0b-1c2d3e4f5a6b'
AGG1 = 'a1a1a1a1-0000-4000-8000-000000000001'
AGG2 = 'a2a2a2a2-0000-4000-8000-000000000002'


def _burial(**overrides):
    values = dict(
        instance_uuid=UUID, project_id='preemptible-project',
        user_id='user', request_spec_id=17,
        flavor={'vcpus': 2, 'memory_mb': 2048, 'root_gb': 20,
                'ephemeral_gb': 1, 'swap': None, 'flavorid': '42',
                'name': 'm1.small', 'extra_specs': {}},
        image_uuid='155d900f-4e14-4e4c-a73d-069cbf4541e6',
        reason={'nova_object.data': {'exception': 'NoValidHost'}})
    values.update(overrides)
    return events.Burial(**values)


def _scheduling_event(payload):
    """all_in_one and master: SchedulingEvent (notifications/events.py)."""
    data = payload['nova_object.data']
    spec = data['request_spec']['nova_object.data']
    return {'instance_uuids': data['instance_uuids'],
            'request_id': spec['id'], 'project_id': spec['project_id'],
            'multiple_instances': len(data['instance_uuids']) > 1}


def _all_in_one_aggregates(payload):
    """all_in_one: SchedulingEvent.aggregates (notifications/events.py)."""
    spec = payload['nova_object.data']['request_spec']
    try:
        d = spec['nova_object.data']['requested_destination']
        return d['nova_object.data']['aggregates']
    except KeyError:
        return None


def _master_aggregates(payload):
    """master: SchedulingEvent.aggregates (notifications/events.py)."""
    spec = payload['nova_object.data']['request_spec']
    try:
        d = spec['nova_object.data']['requested_destination']
        return d['nova_object.data']['aggregates'][0].split(',')
    except TypeError:
        return 'the aggregates whose metadata has cell_type=default'


def _state_update(payload):
    """all_in_one InstanceUpdateEvent, master StateUpdateEvent.from_payload
    and Resources.obj_from_payload (objects/resources.py).
    """
    data = payload['nova_object.data']
    state = data['state_update']['nova_object.data']
    flavor = data['flavor']['nova_object.data']
    return {
        'uuid': data['uuid'], 'image': data['image_uuid'],
        'failed_build': (state['old_state'] == 'building'
                         and state['state'] == 'pending'),
        'failed_rebuild': (state['state'] == 'pending'
                           and state['old_task_state'] == 'rebuilding'
                           and state['new_task_state'] is None),
        'resources': {'VCPU': flavor['vcpus'],
                      'DISK_GB': (flavor['ephemeral_gb'] + flavor['root_gb']
                                  + flavor['swap']),
                      'MEMORY_MB': flavor['memory_mb']},
    }


class AllInOneTest(testtools.TestCase):

    def test_event_types_and_priorities(self):
        found = events.all_in_one_events(_burial())
        self.assertEqual([('error', 'instance.schedule'),
                          ('info', 'instance.update')],
                         [(e.priority, e.event_type) for e in found])

    def test_scheduling_event(self):
        schedule = events.all_in_one_events(_burial())[0].payload
        self.assertEqual({'instance_uuids': [UUID], 'request_id': 17,
                          'project_id': 'preemptible-project',
                          'multiple_instances': False},
                         _scheduling_event(schedule))
        self.assertEqual('NoValidHost', schedule['nova_object.data'][
            'reason']['nova_object.data']['exception'])

    def test_no_aggregates_is_no_requested_destination(self):
        # A None would raise TypeError in all_in_one's listener.
        schedule = events.all_in_one_events(_burial())[0].payload
        spec = schedule['nova_object.data']['request_spec']
        self.assertNotIn('requested_destination', spec['nova_object.data'])
        self.assertIsNone(_all_in_one_aggregates(schedule))

    def test_aggregates_one_uuid_an_item(self):
        schedule = events.all_in_one_events(
            _burial(aggregates=[AGG1, AGG2]))[0].payload
        self.assertEqual([AGG1, AGG2], _all_in_one_aggregates(schedule))

    def test_state_update(self):
        update = events.all_in_one_events(_burial())[1].payload
        self.assertEqual({
            'uuid': UUID, 'image': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
            'failed_build': True, 'failed_rebuild': False,
            'resources': {'VCPU': 2, 'DISK_GB': 21, 'MEMORY_MB': 2048}},
            _state_update(update))
        self.assertNotIn('block_devices', update['nova_object.data'])


class MasterTest(testtools.TestCase):

    def test_event_types_and_priorities(self):
        found = events.master_events(_burial())
        self.assertEqual([('error', 'scheduler.select_destinations.error'),
                          ('info', 'instance.update')],
                         [(e.priority, e.event_type) for e in found])

    def test_scheduling_event(self):
        schedule = events.master_events(_burial())[0].payload
        self.assertEqual({'instance_uuids': [UUID], 'request_id': 17,
                          'project_id': 'preemptible-project',
                          'multiple_instances': False},
                         _scheduling_event(schedule))

    def test_no_aggregates_is_a_requested_destination_of_none(self):
        # A missing key would raise KeyError when master's reaper is
        # triggered, and the server would be reset to error.
        schedule = events.master_events(_burial())[0].payload
        spec = schedule['nova_object.data']['request_spec']
        self.assertIsNone(spec['nova_object.data']['requested_destination'])
        self.assertEqual('the aggregates whose metadata has '
                         'cell_type=default', _master_aggregates(schedule))

    def test_aggregates_as_nova_writes_them(self):
        schedule = events.master_events(
            _burial(aggregates=[AGG1, AGG2]))[0].payload
        self.assertEqual([AGG1, AGG2], _master_aggregates(schedule))

    def test_state_update_with_block_devices(self):
        update = events.master_events(_burial(
            block_devices=[(0, 'volume-1'), (None, 'volume-2')]))[1].payload
        self.assertTrue(_state_update(update)['failed_build'])
        # master: StateUpdateEvent.is_bfv and root_volume.
        bdms = [bdm['nova_object.data']
                for bdm in update['nova_object.data']['block_devices']]
        self.assertEqual(['volume-1'], [bdm['volume_id'] for bdm in bdms
                                        if bdm['boot_index'] == 0])

    def test_image_backed_server_has_an_empty_list(self):
        update = events.master_events(_burial())[1].payload
        self.assertEqual([], update['nova_object.data']['block_devices'])


class EventsForTest(testtools.TestCase):

    def test_by_version(self):
        burial = _burial()
        self.assertEqual('instance.schedule',
                         events.events_for('all_in_one', burial)[0]
                         .event_type)
        self.assertEqual('scheduler.select_destinations.error',
                         events.events_for('master', burial)[0].event_type)
