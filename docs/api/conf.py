"""Sphinx configuration of the gtm API reference (built from docstrings).

Build:  python -m sphinx -W --keep-going -b html docs/api docs/api/_build/html
(``pip install -e '.[docs]'`` installs Sphinx; tests/test_docs.py builds it with warnings as errors.)
"""

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "gtm"
author = "gtm developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autoclass_content = "both"
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # "Attributes:" as field lists (autodoc documents the members themselves)
default_role = "code"
nitpicky = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
