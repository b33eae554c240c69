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

"""``nova-cell0-rebuild-demo``: pre-emptible servers on an in-process Nova.

The command line is checked, the sandbox's port taken and its state
directory prepared before Nova is imported: ``--help``, a usage error, a
port in use and a state directory that cannot be used answer at once, and
patch nothing. Then eventlet patches the standard library, as Nova's
services do, and :mod:`.run` (which imports Nova) takes over.
"""

import logging
import os
import sys
import warnings

from nova_cell0_rebuild.adapters import nova_release
from nova_cell0_rebuild.demo import command_line
from nova_cell0_rebuild.demo import loopback
from nova_cell0_rebuild.demo import state


def enter_eventlet_mode():
    """Monkey-patch the standard library for Nova's eventlet mode.

    The demo's Nova is always the eventlet one: its HTTP sandbox serves with
    eventlet.wsgi, next to Nova's services, in one process.
    """
    os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = 'False'
    # Eventlet mode is deprecated by eventlet and by Nova 34; both say so
    # when patching, which is news for Nova's developers, not for the
    # demo's users.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        logging.getLogger('nova.monkey_patch').setLevel(logging.ERROR)
        nova_release.patch_eventlet()
        logging.getLogger('nova.monkey_patch').setLevel(logging.NOTSET)


def main(argv=None):
    args = command_line.parse_args(argv)
    host, port = args.serve or ('127.0.0.1', 0)
    try:
        listening = loopback.listen(host, port)
    except OSError as exc:
        print('%s: cannot listen on %s:%d: %s'
              % (command_line.PROG, host, port, exc), file=sys.stderr)
        return 2
    sandbox_state = None
    if args.serve:
        try:
            sandbox_state = state.prepare(args.state_dir)
        except state.StateDirectoryError as exc:
            listening.close()
            print('%s: --state-dir: %s' % (command_line.PROG, exc),
                  file=sys.stderr)
            return 2
    enter_eventlet_mode()
    # Only now: it imports Nova.
    from nova_cell0_rebuild.demo import run
    try:
        return run.run(args, listening, sandbox_state)
    finally:
        if sandbox_state is not None and sandbox_state.temporary:
            sandbox_state.remove()


if __name__ == '__main__':
    sys.exit(main())
