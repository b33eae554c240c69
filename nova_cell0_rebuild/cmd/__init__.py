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

"""Command-line tools of nova-cell0-rebuild.

``nova-cell0-rebuild-manage`` (:mod:`.manage`), ``nova-cell0-rebuild-status``
(:mod:`.status`) and ``nova-cell0-rebuild-aardvark-relay``
(:mod:`.aardvark_relay`): each reads Nova's configuration files through
:mod:`.startup` and answers in one line with the exit codes it documents.
They sit on top: they may import any layer of the package and its public
functions; nothing imports them.
"""

import logging
import warnings

# Importing Nova pulls in eventlet, which warns on import that it is
# deprecated, and Nova 29 and 30 import pkg_resources, which warns the same;
# an operator running our commands cannot act on either.
warnings.filterwarnings('ignore', message='\\s*Eventlet is deprecated')
warnings.filterwarnings('ignore', message='pkg_resources is deprecated')

# Nova 32 and older monkey-patch eventlet when nova.api.openstack is
# imported, and warn that oslo.context was imported first: true of any
# command line that imports Nova after oslo, and nothing an operator can act
# on. Real problems are errors, still shown.
logging.getLogger('nova.monkey_patch').setLevel(logging.ERROR)
