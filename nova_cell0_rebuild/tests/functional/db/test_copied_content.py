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

"""The move's compare-and-swap on a server's cell0 rows, on every backend.

The move hard-deletes a server's cell0 rows only while they still hold what
it copied (adapters/nova_copied_content.py, folded into the DELETEs of
nova_cell0_rows.destroy_cell0_instance). Nova's cell database is MySQL or
PostgreSQL in a real cloud; the in-process functional tests run it on
SQLite only. Here Nova's cell tables are created on each backend, the
server is written and changed with Nova's own objects (as its API does),
and destroy_cell0_instance itself runs against that database: nova.context
finds the cell's database in its cache, as in every Nova service.
"""

import fixtures
import netaddr
from nova.api.metadata import password as nova_password
from nova import context as nova_context
from nova.db.main import models as main_models
from nova.db import migration as nova_migration
from nova import objects as nova_objects
import sqlalchemy as sa

from nova_cell0_rebuild.adapters import nova_cell0_rows
from nova_cell0_rebuild.adapters import nova_compute
from nova_cell0_rebuild.adapters import nova_instance_history
from nova_cell0_rebuild.tasks import undo
from nova_cell0_rebuild.tests.functional.db import base

UUID = '3c4f1e2a-8b7d-4c6e-9f0a-1b2c3d4e5f60'
CLAIM = undo.CLAIM

# Tables holding a server's rows, each by the column naming the server.
_ROWS = (
    (main_models.Instance, 'uuid'),
    (main_models.InstanceExtra, 'instance_uuid'),
    (main_models.InstanceSystemMetadata, 'instance_uuid'),
    (main_models.InstanceMetadata, 'instance_uuid'),
    (main_models.InstanceInfoCache, 'instance_uuid'),
    (main_models.InstanceAction, 'instance_uuid'),
)


class _CopiedContentTest(object):

    def setUp(self):
        super().setUp()
        nova_objects.register_all()
        self.cell0 = nova_objects.CellMapping(
            uuid=nova_objects.CellMapping.CELL0_UUID, name='cell0',
            database_connection='unused: the cache below answers',
            transport_url='none:///')
        # What target_cell finds for a cell it already connected to: this
        # test's database, so Nova's objects and the adapter use it.
        self.useFixture(fixtures.MockPatchObject(
            nova_context, 'CELL_CACHE',
            {self.cell0.uuid: (self.facade, None)}))
        self.admin = nova_context.get_admin_context()
        # Nova's cell schema as nova-manage db sync writes it (its charset
        # and collations on MySQL, its INET columns on PostgreSQL).
        with nova_context.target_cell(self.admin, self.cell0) as cctxt:
            nova_migration.db_sync(context=cctxt)
        self.context = nova_context.RequestContext(
            'user', 'project', is_admin=True)

    # -- Nova's writes ---------------------------------------------------

    def _create(self, **overrides):
        values = dict(
            uuid=UUID, project_id='project', user_id='user',
            display_name='web', hostname='web', display_description=None,
            vm_state='error', task_state=CLAIM, locked=False, locked_by=None,
            auto_disk_config=False,
            access_ip_v4='192.0.2.10',
            access_ip_v6='2001:0db8:0000:0000:0000:0000:0000:0001',
            key_data='ssh-ed25519 AAAA user@host',
            user_data='I2Nsb3VkLWNvbmZpZw==',
            memory_mb=512, vcpus=1, root_gb=1, ephemeral_gb=0,
            launch_index=0, reservation_id='r-copied',
            availability_zone=None,
            flavor=nova_objects.Flavor(
                id=1, flavorid='1', name='m1.tiny', memory_mb=512, vcpus=1,
                root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                vcpu_weight=None, disabled=False, is_public=True,
                extra_specs={}, description=None),
            system_metadata={'image_min_ram': '0', 'image_kernel_id': None,
                             'owner_user_name': 'w\u00e9b'},
            metadata={'role': 'web'})
        values.update(overrides)
        with nova_context.target_cell(self.context, self.cell0) as cctxt:
            nova_objects.Instance(cctxt, **values).create()
            # The create action, with the event of the conductor's burial.
            nova_objects.InstanceAction.action_start(
                cctxt, UUID, 'create', want_result=False)
            nova_objects.InstanceActionEvent.event_start(
                cctxt, UUID, 'conductor_schedule_and_build_instances',
                want_result=False, host='conductor')

    def _read(self):
        """The server as the move reads it (nova_compute), and its history."""
        with nova_context.target_cell(self.admin, self.cell0) as cctxt:
            instance = nova_objects.Instance.get_by_uuid(
                cctxt, UUID, expected_attrs=nova_compute.INSTANCE_ATTRS)
        return instance, nova_instance_history.read(
            self.admin, self.cell0, UUID)

    def _save(self, **changes):
        """A write of Nova's API to the live server: Instance.save()."""
        live, _history = self._read()
        system_metadata = changes.pop('system_metadata', None)
        for name, value in changes.items():
            setattr(live, name, value)
        if system_metadata is not None:
            live.system_metadata.update(system_metadata)
        live.save()

    def _remove(self, copied, history):
        return nova_cell0_rows.destroy_cell0_instance(
            self.admin, self.cell0, copied, task_state=CLAIM, copied=copied,
            history=history)

    def _rows(self):
        counts = {}
        with self.engine.connect() as conn:
            for model, column in _ROWS:
                counts[model.__tablename__] = conn.execute(
                    sa.select(sa.func.count()).select_from(model).where(
                        getattr(model, column) == UUID)).scalar()
        return counts

    def _assert_kept_after(self, **changes):
        """The move read and copied the server, then Nova wrote *changes*:
        the DELETE deletes nothing.
        """
        self._create()
        copied, history = self._read()
        self._save(**changes)
        before = self._rows()
        self.assertFalse(self._remove(copied, history))
        self.assertEqual(before, self._rows())
        self.assertEqual(1, before['instances'])
        return self._read()[0]

    def _assert_removed(self, copied, history):
        self.assertTrue(self._remove(copied, history))
        self.assertEqual({model.__tablename__: 0 for model, _ in _ROWS},
                         self._rows())

    # -- Unchanged ---------------------------------------------------------

    def test_unchanged_rows_are_deleted(self):
        self._create()
        copied, history = self._read()
        self.assertEqual(1, len(history['actions']))
        self.assertEqual(1, len(history['actions'][0]['events']))
        self._assert_removed(copied, history)

    def test_ipv6_access_address_equals_its_stored_text(self):
        self._create()
        copied, history = self._read()
        self.assertIsInstance(copied.access_ip_v6, netaddr.IPAddress)
        self.assertEqual(netaddr.IPAddress('2001:db8::1'),
                         copied.access_ip_v6)
        self._assert_removed(copied, history)

    def test_nulls_compare_equal(self):
        self._create(system_metadata={'image_kernel_id': None,
                                      'image_ramdisk_id': None})
        copied, history = self._read()
        self.assertIsNone(copied.display_description)
        self.assertIsNone(copied.locked_by)
        self.assertIsNone(copied.system_metadata['image_kernel_id'])
        self._assert_removed(copied, history)

    def _null_booleans(self):
        # As in a row Nova's API did not write whole: Nova reads each NULL
        # as the field's default, False.
        with self.engine.begin() as conn:
            conn.execute(sa.update(main_models.Instance).where(
                main_models.Instance.uuid == UUID).values(
                    locked=None, auto_disk_config=None,
                    shutdown_terminate=None, disable_terminate=None))

    def test_null_booleans_read_as_false_compare_equal(self):
        self._create()
        self._null_booleans()
        copied, history = self._read()
        self.assertIs(False, copied.locked)
        self.assertIs(False, copied.auto_disk_config)
        self._assert_removed(copied, history)

    def test_a_lock_of_a_row_with_null_booleans_is_kept(self):
        self._create()
        self._null_booleans()
        copied, history = self._read()
        self._save(locked=True, locked_by='owner')
        self.assertFalse(self._remove(copied, history))
        self.assertTrue(self._read()[0].locked)

    def test_the_claim_is_compared(self):
        self._create(task_state=None)
        copied, history = self._read()
        self.assertFalse(self._remove(copied, history))
        self.assertEqual(1, self._rows()['instances'])

    # -- Changed columns of the instance row ---------------------------

    def test_a_rename_in_case_only_is_kept(self):
        live = self._assert_kept_after(display_name='Web')
        self.assertEqual('Web', live.display_name)

    def test_a_rename_adding_a_trailing_space_is_kept(self):
        live = self._assert_kept_after(display_name='web ')
        self.assertEqual('web ', live.display_name)

    def test_a_rename_to_an_accented_name_is_kept(self):
        # Equal to 'web' under MySQL's accent-insensitive collations.
        live = self._assert_kept_after(display_name='w\u00e9b')
        self.assertEqual('w\u00e9b', live.display_name)

    def test_a_description_from_null_to_empty_is_kept(self):
        live = self._assert_kept_after(display_description='')
        self.assertEqual('', live.display_description)

    def test_a_lock_is_kept(self):
        live = self._assert_kept_after(locked=True, locked_by='admin')
        self.assertTrue(live.locked)

    def test_locked_by_alone_is_kept(self):
        live = self._assert_kept_after(locked_by='owner')
        self.assertEqual('owner', live.locked_by)

    def test_a_reset_state_is_kept(self):
        live = self._assert_kept_after(vm_state='active')
        self.assertEqual('active', live.vm_state)

    def test_another_ipv6_access_address_is_kept(self):
        live = self._assert_kept_after(access_ip_v6='2001:db8::2')
        self.assertEqual(netaddr.IPAddress('2001:db8::2'),
                         live.access_ip_v6)

    # -- Changed system_metadata ---------------------------------------

    def test_a_locked_reason_added_is_kept(self):
        live = self._assert_kept_after(
            system_metadata={'locked_reason': 'maintenance'})
        self.assertEqual('maintenance', live.system_metadata['locked_reason'])

    def _assert_reason_change_kept(self, new_reason):
        self._create(system_metadata={'locked_reason': 'maintenance'})
        copied, history = self._read()
        self._save(system_metadata={'locked_reason': new_reason})
        self.assertFalse(self._remove(copied, history))
        self.assertEqual(1, self._rows()['instances'])
        live = self._read()[0]
        self.assertEqual(new_reason, live.system_metadata['locked_reason'])

    def test_a_locked_reason_changed_in_case_only_is_kept(self):
        self._assert_reason_change_kept('Maintenance')

    def test_a_locked_reason_with_a_trailing_space_is_kept(self):
        self._assert_reason_change_kept('maintenance ')

    def test_a_null_value_set_to_empty_is_kept(self):
        live = self._assert_kept_after(system_metadata={'image_kernel_id': ''})
        self.assertEqual('', live.system_metadata['image_kernel_id'])

    def test_a_cleared_password_is_kept(self):
        self._create(system_metadata=nova_password.convert_password(
            None, 'x' * 300))
        copied, history = self._read()
        self.assertEqual('x' * 255, copied.system_metadata['password_0'])
        self._save(system_metadata=nova_password.convert_password(
            None, None))
        self.assertFalse(self._remove(copied, history))
        live = self._read()[0]
        self.assertEqual('', live.system_metadata['password_0'])
        self.assertEqual(1, self._rows()['instances'])

    def test_a_password_cleared_where_none_was_set_is_kept(self):
        live = self._assert_kept_after(
            system_metadata=nova_password.convert_password(None, None))
        self.assertEqual('', live.system_metadata['password_3'])

    # -- Changed history -----------------------------------------------

    def test_an_action_added_is_kept(self):
        self._create()
        copied, history = self._read()
        with nova_context.target_cell(
                nova_context.RequestContext('user', 'project', is_admin=True),
                self.cell0) as cctxt:
            nova_objects.InstanceAction.action_start(
                cctxt, UUID, 'lock', want_result=False)
        before = self._rows()
        self.assertEqual(2, before['instance_actions'])
        self.assertFalse(self._remove(copied, history))
        self.assertEqual(before, self._rows())

    def test_an_event_added_is_kept(self):
        self._create()
        copied, history = self._read()
        # An event of the create action, under its request id.
        with nova_context.target_cell(self.context, self.cell0) as cctxt:
            nova_objects.InstanceActionEvent.event_start(
                cctxt, UUID, 'compute_late_event', want_result=False)
        self.assertFalse(self._remove(copied, history))
        self.assertEqual(1, self._rows()['instances'])
        _copied, history_now = self._read()
        self.assertEqual(2, len(history_now['actions'][0]['events']))


globals().update(base.backends(_CopiedContentTest))
