#!/usr/bin/env python3
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

"""Put what Nova's functional tests read from Nova's source tree in place.

Nova's wheel lacks ``doc/api_samples``, which its API sample tests compare
every response with (they look for it at ``<site-packages>/doc``). This
takes it from the sdist of the installed Nova, downloaded once from the
package index into a cache folder and checked against the SHA-256 below
when it is listed. Usage: ``nova_sdist_data.py CACHE_DIR``.
"""

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile

#: sdist SHA-256 of each Nova release checked here (PyPI's own digests).
SDIST_SHA256 = {
    '34.0.0': ('919eef77cda4ce0cc4746a5853b5d934'
               '1ebd0ae37bc8b1939eb77d17727c00df'),
}


def _download(version, cache):
    tarball = os.path.join(cache, 'nova-%s.tar.gz' % version)
    if not os.path.exists(tarball):
        os.makedirs(cache, exist_ok=True)
        subprocess.check_call([
            sys.executable, '-m', 'pip', 'download', '--quiet',
            '--no-binary', ':all:', '--no-deps', '-d', cache,
            'nova==%s' % version])
    expected = SDIST_SHA256.get(version)
    if expected is not None:
        with open(tarball, 'rb') as sdist:
            digest = hashlib.sha256(sdist.read()).hexdigest()
        if digest != expected:
            os.unlink(tarball)
            sys.exit('%s: SHA-256 %s, expected %s' % (tarball, digest,
                                                      expected))
    return tarball


def main(cache):
    import nova
    version = importlib.metadata.version('nova')
    target = os.path.join(os.path.dirname(os.path.dirname(nova.__file__)),
                          'doc', 'api_samples')
    stamp = os.path.join(target, '.nova-version')
    if os.path.exists(stamp) and open(stamp).read() == version:
        return 0
    prefix = 'nova-%s/doc/api_samples/' % version
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(_download(version, cache)) as sdist:
        members = [m for m in sdist.getmembers()
                   if m.name.startswith(prefix) and m.isfile()]
        for member in members:
            member.name = member.name[len(prefix):]
            sdist.extract(member, target, filter='data')
    with open(stamp, 'w') as stamp_file:
        stamp_file.write(version)
    print('%d API sample files of Nova %s in %s'
          % (len(members), version, target))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
