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

"""Adapter for where nova-api finds its paste file (``api-paste.ini``)."""

import os

from nova.api.openstack import wsgi_app


def paste_files(conf):
    """The paste files nova-api may load, and the names looked for.

    Two places, as in Nova: ``[wsgi] api_paste_config``, found as
    ``nova.api.wsgi.Loader`` finds it (a relative name is looked up beside
    the configuration files, then in Nova's default directories); and the
    file Nova's WSGI application (``nova.wsgi.osapi_compute``) loads, the
    first of ``$OS_NOVA_CONFIG_DIR/$OS_NOVA_CONFIG_FILES``
    (``/etc/nova/api-paste.ini`` by default).

    :returns: (existing paths, without duplicates; every name looked for)
    """
    configured = conf.wsgi.api_paste_config
    if os.path.isabs(configured):
        candidates = [configured if os.path.exists(configured) else None]
    else:
        candidates = [conf.find_file(configured)]
    wsgi_file = wsgi_app._get_config_files()[0]
    candidates.append(wsgi_file if os.path.exists(wsgi_file) else None)
    found = []
    for path in candidates:
        if path is not None and os.path.realpath(path) not in [
                os.path.realpath(p) for p in found]:
            found.append(path)
    return found, [configured, wsgi_file]
