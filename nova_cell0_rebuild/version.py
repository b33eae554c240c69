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

"""The version of nova-cell0-rebuild, as pbr reads it from the package."""

import pbr.version

#: pbr's view of the installed distribution.
version_info = pbr.version.VersionInfo('nova-cell0-rebuild')


def release_string():
    """The full version, what every ``--version`` prints.

    The same string pip reports: ``0.1.0`` for a release, ``0.1.0.dev12``
    for a build twelve commits into the way to it (pbr's pre-versioning:
    the ``version`` of setup.cfg is the release it leads to).
    """
    return version_info.release_string()
