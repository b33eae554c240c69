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

"""A one-command demo: pre-emptible servers on an in-process Nova 34.

Nova runs in eventlet mode here, as in this project's functional tests, so
monkey patching happens before anything else of the demo is imported.
"""

import logging
import os
import warnings

# The demo's Nova is always the eventlet one: its HTTP sandbox serves with
# eventlet.wsgi, next to Nova's services, in one process.
os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = 'False'

# Eventlet mode is deprecated by eventlet and by Nova 34; both say so when
# patching, which is news for Nova's developers, not for the demo's users.
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    logging.getLogger('nova.monkey_patch').setLevel(logging.ERROR)
    from nova_cell0_rebuild.adapters import nova_release
    nova_release.patch_eventlet()
    logging.getLogger('nova.monkey_patch').setLevel(logging.NOTSET)
