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

"""nova-cell0-rebuild-status: is nova-cell0-rebuild ready to serve?

``nova-cell0-rebuild-status upgrade check [--json]`` works as
``nova-status upgrade check``: it reads Nova's configuration files and
exits with 0 when every check succeeds, 1 when one warns, 2 when one fails
and 255 when a check could not run, or the configuration files cannot be
read (one line on stderr names the file). ``--version`` prints the version
of nova-cell0-rebuild.
"""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils

from nova_cell0_rebuild._i18n import _
from nova_cell0_rebuild.adapters import nova_cell0_listing
from nova_cell0_rebuild.adapters import nova_paste
from nova_cell0_rebuild.api import microversion_settings
from nova_cell0_rebuild.api import pipeline_position as position
from nova_cell0_rebuild.cmd import startup
from nova_cell0_rebuild import conf as plugin_conf
from nova_cell0_rebuild.conf import cell0_rebuild as cell0_rebuild_conf
from nova_cell0_rebuild.db import migration
from nova_cell0_rebuild import exception
from nova_cell0_rebuild import gates
from nova_cell0_rebuild import objects
from nova_cell0_rebuild.objects import record_coverage
from nova_cell0_rebuild.pending import leader

CONF = cfg.CONF
#: Nova's default [DEFAULT] long_rpc_timeout, where Nova's options are not
#: registered.
NOVA_LONG_RPC_TIMEOUT = 1800

PROG = 'nova-cell0-rebuild-status'

Code = upgradecheck.Code
Result = upgradecheck.Result

#: Transport URL schemes of RabbitMQ (oslo.messaging's rabbit driver).
RABBIT_SCHEMES = ('rabbit', 'kombu')


class UpgradeCommands(upgradecheck.UpgradeCommands):
    """Checks that nova-cell0-rebuild is set up to serve nova-api."""

    display_title = _('nova-cell0-rebuild Upgrade Check Results')
    #: Servers read from cell0 at a time when counting unrecorded ones.
    page_size = 1000

    def _check_pipeline(self):
        """The filter is right after keystonecontext in every pipeline."""
        found, looked_for = nova_paste.paste_files(CONF)
        if not found:
            return Result(Code.FAILURE, _(
                'No paste file of nova-api was found (looked for %s). Set '
                '[wsgi] api_paste_config to the api-paste.ini nova-api '
                'loads.') % ' and '.join(looked_for))
        wrong, late, right = [], [], []
        for path in found:
            try:
                positions = position.positions(path)
            except position.PasteFileError as exc:
                wrong.append(str(exc))
                continue
            for name, where in sorted(positions.items()):
                entry = '%s of %s: %s' % (name, path, where)
                if where == position.RIGHT_AFTER_CONTEXT:
                    right.append(entry)
                elif where == position.LATER:
                    late.append(entry)
                else:
                    wrong.append(entry)
        if wrong:
            return Result(Code.FAILURE, _(
                'cell0_rebuild must be right after keystonecontext in every '
                'v2.1 pipeline of nova-api (%s). Without it, servers are '
                'created without a create record and cannot be rebuilt '
                'from cell0; fix the paste file and restart nova-api.')
                % '; '.join(wrong))
        if late:
            return Result(Code.WARNING, _(
                'cell0_rebuild should be right after keystonecontext (%s): '
                'a filter in between can change or answer a request before '
                'the filter sees it.') % '; '.join(late))
        return Result(Code.SUCCESS, '; '.join(right))

    def _check_database(self):
        """The plugin's tables are at the newest revision."""
        missing = startup.missing_option(
            CONF, PROG, (('cell0_rebuild', 'connection'),
                         ('api_database', 'connection')))
        if missing:
            return Result(Code.FAILURE, missing)
        try:
            sync_needed = migration.sync_needed()
        except startup.DB_ERRORS as exc:
            return Result(Code.FAILURE, _(
                "The plugin's tables cannot be read: %s")
                % startup.one_line(exc))
        if sync_needed:
            return Result(Code.FAILURE, sync_needed)
        return Result(Code.SUCCESS, _('At revision %s.')
                      % migration.head_version())

    def _check_min_microversion(self):
        """[cell0_rebuild] min_microversion suits the installed Nova."""
        try:
            value = microversion_settings.effective_min_microversion(CONF)
        except (exception.InvalidConfiguration, ValueError) as exc:
            return Result(Code.FAILURE, _(
                '%s. nova-api will not load the filter.')
                % startup.one_line(exc).rstrip('.?! '))
        if CONF.cell0_rebuild.min_microversion is None:
            return Result(Code.SUCCESS, _(
                'Rebuilds from cell0 are handled from microversion %s, the '
                'maximum of the installed Nova (min_microversion is unset, '
                'so it moves when Nova is upgraded).') % value)
        return Result(Code.SUCCESS, _('Rebuilds from cell0 are handled '
                                      'from microversion %s.') % value)

    def _check_gates(self):
        """Every gate of [cell0_rebuild] enabled_gates loads."""
        try:
            chain = gates.load_gates(CONF)
        except exception.InvalidConfiguration as exc:
            return Result(Code.FAILURE, _(
                '%s. nova-api will not load the filter.')
                % startup.one_line(exc).rstrip('.?! '))
        missing = [name for name in cell0_rebuild_conf.GATE_NAMES
                   if name not in chain.names]
        if missing:
            return Result(Code.WARNING, _(
                'Built-in gates not enabled: %s. Each one guards against '
                'rebuilding a server that should not be; see the gates '
                'guide before leaving one out.') % ', '.join(missing))
        return Result(Code.SUCCESS, _('Enabled gates: %s.')
                      % ', '.join(chain.names))

    def _unrecorded(self, context, cell0, page):
        """The servers of a page whose create record cannot be found."""
        found = record_coverage.recorded(
            context, instance_uuids=[i.uuid for i in page],
            reservation_ids=[i.reservation_id for i in page])
        left = [i for i in page
                if i.uuid not in found['instance_uuid'] and
                i.reservation_id not in found['reservation_id']]
        if not left:
            return []
        request_ids = nova_cell0_listing.create_request_ids(
            context, cell0, [i.uuid for i in left])
        found = record_coverage.recorded(
            context, request_ids=request_ids.values())
        return [i for i in left
                if request_ids.get(i.uuid) not in found['request_id']]

    def _count_unrecorded(self):
        """How many servers in cell0 have no create record."""
        context = nova_cell0_listing.admin_context()
        cell0 = nova_cell0_listing.get_cell0(context)
        return sum(len(self._unrecorded(context, cell0, page))
                   for page in nova_cell0_listing.pages(
                       context, cell0, self.page_size))

    def _check_unrecorded(self):
        """Servers in cell0 without a create record, which gates refuse."""
        missing = startup.missing_option(
            CONF, PROG, (('api_database', 'connection'),))
        if missing:
            return Result(Code.FAILURE, _(
                'Servers in cell0 cannot be counted: %s') % missing)
        try:
            count = self._count_unrecorded()
        except nova_cell0_listing.Cell0NotMapped:
            return Result(Code.FAILURE, _(
                'cell0 is not mapped: run nova-manage cell_v2 map_cell0.'))
        except startup.DB_ERRORS as exc:
            return Result(Code.FAILURE, _(
                'Servers in cell0 cannot be counted: %s')
                % startup.one_line(exc))
        if not count:
            return Result(Code.SUCCESS, _(
                'Every server in cell0 has a create record.'))
        details = _(
            '%d server(s) in cell0 have no create record: they were created '
            'while the cell0_rebuild filter was not in nova-api\'s '
            'pipeline.') % count
        if ('record' in CONF.cell0_rebuild.enabled_gates and
                not CONF.cell0_rebuild.allow_unrecorded):
            return Result(Code.WARNING, details + ' ' + _(
                'The record gate will refuse to rebuild them from cell0 '
                '(409 Conflict). Delete and re-create them, or check them '
                'and set [cell0_rebuild] allow_unrecorded = True.'))
        return Result(Code.SUCCESS, details + ' ' + _(
            'They can be rebuilt from cell0 with the networks Neutron '
            'allocates by default.'))

    def _check_durable_queues(self):
        """Nova's RPC queues outlive a RabbitMQ restart."""
        url = getattr(CONF, 'transport_url', None) or ''
        scheme = url.split(':', 1)[0]
        if url and scheme not in RABBIT_SCHEMES:
            return Result(Code.SUCCESS, _(
                'Not RabbitMQ (%s): not checked.') % scheme)
        try:
            # Registered by oslo.messaging's rabbit driver, which Nova's
            # configuration parsing loads (nova.rpc.init).
            rabbit = CONF.oslo_messaging_rabbit
        except cfg.NoSuchOptError:
            return Result(Code.SUCCESS, _(
                "oslo.messaging's rabbit driver is not loaded: not "
                "checked."))
        if rabbit.rabbit_quorum_queue or rabbit.amqp_durable_queues:
            return Result(Code.SUCCESS, _(
                "Nova's RPC queues are durable ([oslo_messaging_rabbit] "
                "%s = true): a rebuild's cast waiting for nova-conductor "
                "outlives a RabbitMQ restart.") % (
                    'rabbit_quorum_queue' if rabbit.rabbit_quorum_queue
                    else 'amqp_durable_queues'))
        return Result(Code.WARNING, _(
            "Nova's RPC queues are transient ([oslo_messaging_rabbit] "
            "rabbit_quorum_queue and amqp_durable_queues are false): when "
            "RabbitMQ restarts, a rebuild from cell0 cast to nova-conductor "
            "but not yet taken is lost, as is a create, and the server "
            "stays in BUILD until it is deleted (heal leaves a move alone "
            "once cast). Set [oslo_messaging_rabbit] rabbit_quorum_queue = "
            "true for every Nova service (RabbitMQ refuses to redeclare an "
            "existing queue with another type: delete Nova's queues while "
            "its services are stopped)."))

    def _check_hand_off_timeout(self):
        """Heal waits longer for a dropped hand-off than a conductor waits
        for the scheduler.
        """
        timeout = CONF.cell0_rebuild.hand_off_timeout
        try:
            longest = CONF.long_rpc_timeout
        except cfg.NoSuchOptError:
            longest = NOVA_LONG_RPC_TIMEOUT
        values = {'timeout': timeout, 'longest': longest}
        if timeout > longest:
            return Result(Code.SUCCESS, _(
                '[cell0_rebuild] hand_off_timeout (%(timeout)d s) is longer '
                'than [DEFAULT] long_rpc_timeout (%(longest)d s): heal '
                'buries again only hand-offs no conductor still '
                'schedules.') % values)
        return Result(Code.WARNING, _(
            '[cell0_rebuild] hand_off_timeout (%(timeout)d s) is not longer '
            'than [DEFAULT] long_rpc_timeout (%(longest)d s), the longest a '
            'conductor waits for the scheduler: heal may bury again a '
            'server a conductor is still placing, and that conductor then '
            'deletes its mapping. Set it above long_rpc_timeout plus the '
            'longest a cast may wait in RabbitMQ while every conductor is '
            'down.') % values)

    def _check_pending(self):
        """With waits enabled, a nova-cell0-rebuild-pending dispatches: its
        epoch's heartbeat is younger than :data:`.leader.STALE_SECONDS`.
        """
        if not CONF.cell0_rebuild_pending.enabled:
            return Result(Code.SUCCESS, _(
                'Waits for room are not enabled ([cell0_rebuild_pending] '
                'enabled = false): no dispatcher is needed.'))
        objects.register_all()
        try:
            epoch = objects.PendingEpoch.get(
                nova_cell0_listing.admin_context(), leader.NAME)
        except startup.DB_ERRORS as exc:
            return Result(Code.FAILURE, _(
                'The dispatcher\'s heartbeat cannot be read: %s')
                % startup.one_line(exc))
        if epoch is None:
            return Result(Code.WARNING, _(
                '[cell0_rebuild_pending] enabled is true, but no '
                'nova-cell0-rebuild-pending has run: servers that opted in '
                'to wait stay buried in cell0. Start '
                'nova-cell0-rebuild-pending.'))
        age = (timeutils.utcnow() - timeutils.normalize_time(
            epoch.heartbeat_at)).total_seconds()
        values = {'holder': epoch.holder, 'epoch': epoch.epoch,
                  'age': age, 'stale': leader.STALE_SECONDS}
        if age > leader.STALE_SECONDS:
            return Result(Code.WARNING, _(
                'No nova-cell0-rebuild-pending dispatches: the last one '
                '(%(holder)s, epoch %(epoch)d) beat %(age)d seconds ago, '
                'more than %(stale)d. Servers that opted in to wait stay '
                'buried in cell0 until a copy runs again.') % values)
        return Result(Code.SUCCESS, _(
            'nova-cell0-rebuild-pending on %(holder)s dispatches (epoch '
            '%(epoch)d, beat %(age)d seconds ago).') % values)

    _upgrade_checks = (
        (_('API pipeline'), _check_pipeline),
        (_('Database'), _check_database),
        (_('Minimum microversion'), _check_min_microversion),
        (_('Gates'), _check_gates),
        (_('Servers in cell0 without a create record'), _check_unrecorded),
        (_('Durable RPC queues'), _check_durable_queues),
        (_('Hand-off timeout'), _check_hand_off_timeout),
        (_('Pending dispatcher'), _check_pending),
    )


def main(argv=None):
    """Parse Nova's configuration and run the requested command."""
    argv = sys.argv if argv is None else argv
    plugin_conf.register_opts(CONF)
    upgradecheck.register_cli_options(CONF, UpgradeCommands())
    try:
        startup.parse_args(argv, PROG, {'upgrade'})
    except startup.ConfigurationError as exc:
        # What upgradecheck answers for a check that could not run.
        print('%s: error: %s' % (PROG, exc), file=sys.stderr)
        return 255
    # What upgradecheck.main() does once it has parsed the configuration:
    # check() reads --json from it.
    upgradecheck.CONF = CONF
    return upgradecheck.run(CONF)
