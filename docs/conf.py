"""Sphinx configuration: MyST Markdown pages, API pages from the numpy-style docstrings."""
from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version

# autodoc documents the installed package (its compiled modules are built at install), not the
# checkout's source folder, which `python -m sphinx` run from the checkout would put first
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]
sys.path.insert(0, os.path.dirname(__file__))  # _ext: the benchmark tables

project = "fastatari"
author = "the fastatari developers"
copyright = "2026, the fastatari developers"
try:
    release = installed_version("fastatari")
except PackageNotFoundError:  # building from a checkout that is not installed
    release = "unreleased"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "_ext.benchmarks",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "_generated", "_inventories", "**/.*"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
# the fronts for optional libraries import them at the top: documented without them
autodoc_mock_imports = ["stable_baselines3", "pufferlib", "gym", "jax", "dm_env", "torch",
                        "tianshou", "torchrl", "tensordict", "ray"]
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
# gymnasium, numpy and the other libraries' classes are documented on their own sites
nitpicky = False

# No network while building (CI has none): intersphinx reads the inventories only when they
# are cached next to the pages (docs/_inventories); otherwise links to them are plain text.
_inventories = os.path.join(os.path.dirname(__file__), "_inventories")
intersphinx_mapping = {
    name: (url, os.path.join(_inventories, f"{name}.inv"))
    for name, url in (("python", "https://docs.python.org/3"),
                      ("numpy", "https://numpy.org/doc/stable"),
                      ("gymnasium", "https://gymnasium.farama.org"))
    if os.path.exists(os.path.join(_inventories, f"{name}.inv"))
}

html_theme = "furo"
html_title = f"fastatari {release}"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
