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

"""Stock Aardvark, both versions, each in a virtualenv of its own.

CERN's Aardvark is a test counterpart of the relay, not part of the
package: its two upstream tarballs (``git archive`` of branch all_in_one at
cbf29f3 and of master at 3bf62bf) are kept beside the project, in
``$MINICLOUD_AARDVARK_DIR`` or ``../shared/thirdparty/aardvark`` from the
source tree, with master's compatibility diff. Each is checked against its
sha256, unpacked under the cloud's working directory and installed with
the project's constraints. ``tests/cloud/test_aardvark.py`` runs them.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile

#: version -> (tarball, its sha256)
TARBALLS = {
    'all_in_one': (
        'aardvark-all_in_one-cbf29f3.tar.gz',
        '49ce156b77d54d8453b32707ea94ed709f743a463b3d63396f85fe896fa9e823'),
    'master': (
        'aardvark-master-3bf62bf.tar.gz',
        '8525953e968d733991de2445a2271ce224eff2e46e2f7b47e99cd22d6305e35c'),
}
COMPAT_DIFF = {'master': 'aardvark-master-compat.diff'}
#: pbr reads the version from git; a tarball has none.
PBR_VERSION = '0.1.0'


class AardvarkError(Exception):
    pass


def tarball_dir(source_tree):
    return os.environ.get('MINICLOUD_AARDVARK_DIR') or os.path.join(
        os.path.dirname(source_tree), 'shared', 'thirdparty', 'aardvark')


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as data:
        for block in iter(lambda: data.read(1 << 16), b''):
            digest.update(block)
    return digest.hexdigest()


def checked_tarball(source_tree, version):
    """The tarball of a version, its sha256 checked.

    :raises: AardvarkError naming the file if it is missing or differs.
    """
    name, expected = TARBALLS[version]
    path = os.path.join(tarball_dir(source_tree), name)
    if not os.path.exists(path):
        raise AardvarkError(
            '%s not found: set MINICLOUD_AARDVARK_DIR to the folder of the '
            'Aardvark tarballs (default ../shared/thirdparty/aardvark from '
            'the source tree)' % path)
    found = _sha256(path)
    if found != expected:
        raise AardvarkError('%s: sha256 %s, expected %s'
                            % (path, found, expected))
    return path


def _unpack(tarball, target):
    with tarfile.open(tarball) as archive:
        archive.extractall(target, filter='data')
    (top,) = os.listdir(target)
    return os.path.join(target, top)


def install(procs, source_tree, workdir, version):
    """Unpack, patch and install one version in ``workdir/aardvark-V``.

    :returns: the virtualenv's directory.
    """
    tarball = checked_tarball(source_tree, version)
    base = os.path.join(workdir, 'aardvark-%s' % version)
    shutil.rmtree(base, ignore_errors=True)
    source = _unpack(tarball, os.path.join(base, 'src'))
    if version in COMPAT_DIFF:
        diff = os.path.join(tarball_dir(source_tree), COMPAT_DIFF[version])
        procs.run('aardvark-install', ['patch', '-p1', '-d', source,
                                       '-i', diff])
    venv = os.path.join(base, 'venv')
    python = 'python%d.%d' % sys.version_info[:2]
    procs.run('aardvark-install', [shutil.which(python) or sys.executable,
                                   '-m', 'venv', venv])
    procs.run('aardvark-install', [
        os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '-q',
        '-c', os.path.join(source_tree, 'upper-constraints.txt'),
        '-c', os.path.join(source_tree, 'tools', 'minicloud',
                           'cloud-constraints.txt'),
        source], env={'PBR_VERSION': PBR_VERSION})
    if version == 'master':
        _copy_migrations(source, venv)
    return venv


def _copy_migrations(source, venv):
    """pbr without git installs no package data: alembic's files."""
    purelib = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c',
         'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
        capture_output=True, text=True, check=True).stdout.strip()
    sqlalchemy = os.path.join('aardvark', 'db', 'sqlalchemy')
    for name in ('alembic', 'alembic.ini'):
        origin = os.path.join(source, sqlalchemy, name)
        target = os.path.join(purelib, sqlalchemy, name)
        if os.path.isdir(origin):
            shutil.copytree(origin, target, dirs_exist_ok=True)
        else:
            shutil.copy(origin, target)
