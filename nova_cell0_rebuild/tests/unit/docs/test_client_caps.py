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

"""What the docs say each stock client sends, against the clients.

The openstack CLI and openstacksdk send an explicit microversion as given
(2.104 included) and cap only the one they pick themselves; the nova CLI
refuses anything above its API_MAX_VERSION. The pages and the option help
name those caps: a client release that moves one fails here. The pages
describe the clients upper-constraints.txt pins; in a venv of an older
release's constraints (tox -e nova29) the older clients are checked
against that release's Nova instead. The clients are test requirements;
where one is not installed its test is skipped.
The sandbox's functional test (test_demo_stock_clients) sends the threshold
with each CLI for real.
"""

import importlib
from importlib import metadata
import inspect
import os
import re
import types

import testtools

from nova_cell0_rebuild.adapters import nova_api
from nova_cell0_rebuild.conf import cell0_rebuild as cell0_rebuild_conf

_SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
REAPER_PAGE = os.path.join('doc', 'source', 'admin', 'reaper-integration.rst')
RELEASES_PAGE = os.path.join('doc', 'source', 'install', 'nova-releases.rst')
CONSTRAINTS = os.path.join(_SOURCE, 'upper-constraints.txt')


def _pinned(distribution):
    """The version upper-constraints.txt pins, or None."""
    with open(CONSTRAINTS) as constraints:
        for line in constraints:
            name, _, version = line.strip().partition('==')
            if name.lower() == distribution:
                return version.lstrip('=')
    return None


def _flat(text):
    """Text with its line breaks and indentation as single spaces."""
    return re.sub(r'\s+', ' ', text)


class ClientCapsTest(testtools.TestCase):

    def _client(self, name):
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            self.skipTest('%s is not installed: %s' % (name, exc))

    def _page(self, path):
        full = os.path.join(_SOURCE, path)
        if not os.path.exists(full):
            self.skipTest('not a source tree: %s' % full)
        with open(full) as page:
            return _flat(page.read())

    def _described(self, distribution):
        """Whether the installed client is the one the pages describe."""
        return metadata.version(distribution) == _pinned(distribution)

    def _help(self, name):
        for opt in cell0_rebuild_conf.ALL_OPTS:
            if opt.name == name:
                return _flat(opt.help)
        self.fail('no option %s' % name)

    def test_the_nova_cli_is_capped_where_the_docs_say(self):
        novaclient = self._client('novaclient')
        cap = novaclient.API_MAX_VERSION.get_string()
        self.assertIn('the nova CLI (python-novaclient 18) is capped at '
                      '``%s``' % cap, self._page(REAPER_PAGE))
        self.assertIn("The valid version range is '2.1' to '%s'" % cap,
                      self._page(REAPER_PAGE))
        self.assertIn('The nova CLI (python-novaclient) is capped at %s and '
                      'cannot send 2.104' % cap, self._page(RELEASES_PAGE))
        self.assertIn('the nova CLI of python-novaclient 18 at most %s' % cap,
                      self._help('reaper_min_microversion'))
        # What the pages say it cannot send is above the cap.
        self.assertGreater(novaclient.api_versions.APIVersion('2.104'),
                           novaclient.API_MAX_VERSION)

    def test_openstacksdk_sends_an_explicit_microversion_as_given(self):
        self._client('openstack')
        from openstack.compute.v2 import server
        # openstacksdk 3 (Nova 29's constraints) names the action too.
        kwargs = ({'action': 'commit'} if 'action' in inspect.signature(
            server.Server._get_microversion).parameters else {})
        for asked in ('2.104', '2.96', '2.65'):
            adapter = types.SimpleNamespace(default_microversion=asked)
            self.assertEqual(asked, server.Server._get_microversion(
                adapter, **kwargs))
        if not self._described('openstacksdk'):
            return
        # Its own pick, when none is asked for, is capped: as the pages say.
        cap = server.Server._max_microversion
        self.assertIn("at most openstacksdk's own cap for servers, ``%s``"
                      % cap, self._page(REAPER_PAGE))
        self.assertIn('without one they send at most %s' % cap,
                      self._page(RELEASES_PAGE))
        self.assertIn('but at most %s when none is given' % cap,
                      self._help('reaper_min_microversion'))

    def test_the_openstack_cli_hands_any_microversion_to_openstacksdk(self):
        self._client('openstackclient')
        from openstackclient.compute import client
        if not self._described('python-openstackclient'):
            # An older release (6.6.1 in Nova 29's constraints) has a cap
            # of its own, which reaches that release's Nova: the highest
            # threshold there is sent.
            self.assertTrue(client.check_api_version(
                nova_api.max_version().get_string()))
            return
        # No cap of its own: it checks nothing and passes the version on
        # as the SDK connection's compute microversion.
        self.assertTrue(client.check_api_version('2.104'))
        self.assertTrue(client.check_api_version('2.999'))

    def test_no_page_says_the_openstack_cli_stops_below_the_threshold(self):
        for path in (REAPER_PAGE, RELEASES_PAGE):
            text = self._page(path)
            self.assertNotIn('openstack CLI at most', text, path)
            self.assertNotIn('stop at 2.100', text, path)
