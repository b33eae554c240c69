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

"""The [cell0_rebuild_client] option group: keystoneauth credentials.

Its options are keystoneauth's own, registered as Nova registers those of
``[service_user]``: the session options and ``auth_type``/``auth_section``
here, the options of the chosen auth plugin when it is loaded.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP_NAME = 'cell0_rebuild_client'

_GROUP_ARGS = dict(
    name=GROUP_NAME,
    title='Rebuild from cell0 operator client options',
    help="""
Credentials that the operator command ``nova-cell0-rebuild-manage rebuild``
uses to talk to Glance, Cinder and Neutron as a service.

A rebuild through the API acts with the token of its caller; the command
has no caller, so it authenticates with these credentials and acts with the
token they get. Use a user with the admin role in a project, for example
Nova's own service user, so that the images, volumes and ports of every
project are visible. When ``auth_type`` is not set here, the credentials of
Nova's ``[service_user]`` section are used, which ``nova.conf`` on a control
node usually carries; set this section only when the command must act as
another user. The API's rebuilds never read it.
""")


def _group():
    """A new OptGroup for each ConfigOpts.

    ``register_group`` copies a group shallowly, so every ConfigOpts given
    one group shares its options; keystoneauth registers those of the
    chosen plugin when it loads it (a required ``auth_url`` among them),
    which would then be missing from every other ConfigOpts.
    """
    return cfg.OptGroup(**_GROUP_ARGS)


def register_opts(conf):
    """Register the [cell0_rebuild_client] options on the given ConfigOpts."""
    conf.register_group(_group())
    ks_loading.register_session_conf_options(conf, GROUP_NAME)
    ks_loading.register_auth_conf_options(conf, GROUP_NAME)


def list_opts():
    # The password plugin's options, as Nova lists them for
    # [service_user]: the others are loaded with the plugin named.
    return {_group(): (
        ks_loading.get_session_conf_options() +
        ks_loading.get_auth_common_conf_options() +
        ks_loading.get_auth_plugin_conf_options('password'))}
