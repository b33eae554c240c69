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

"""Sphinx configuration for the nova-cell0-rebuild documentation."""

import os
import sys

# doc/source/_exts: the bench-results directive of the performance page.
sys.path.insert(0, os.path.join(os.path.abspath(os.path.dirname(__file__)),
                                '_exts'))

# -- General configuration ----------------------------------------------------

extensions = [
    'sphinx.ext.autodoc',
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
    'stevedore.sphinxext',
    'bench_results',
]

# oslo_config.sphinxconfiggen: writes _static/nova-cell0-rebuild.conf.sample
config_generator_config_file = (
    '../../etc/nova-cell0-rebuild/nova-cell0-rebuild-config-generator.conf')
sample_config_basename = '_static/nova-cell0-rebuild'

# oslo_policy.sphinxpolicygen: writes
# _static/nova-cell0-rebuild.policy.yaml.sample
policy_generator_config_file = (
    '../../etc/nova-cell0-rebuild/nova-cell0-rebuild-policy-generator.conf')
sample_policy_basename = '_static/nova-cell0-rebuild'

# openstackdocstheme options
openstackdocs_repo_name = 'x/nova-cell0-rebuild'
openstackdocs_bug_project = 'nova-cell0-rebuild'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False

master_doc = 'index'

project = 'nova-cell0-rebuild'
copyright = '2026, The nova-cell0-rebuild Authors'

add_function_parentheses = True
add_module_names = True
pygments_style = 'native'

# -- Options for HTML output --------------------------------------------------

html_theme = 'openstackdocs'
html_static_path = ['_static']
htmlhelp_basename = '%sdoc' % project

# -- Options for LaTeX output -------------------------------------------------

latex_documents = [
    ('index',
     'doc-%s.tex' % project,
     'nova-cell0-rebuild Documentation',
     'The nova-cell0-rebuild Authors', 'manual'),
]
