"""Sphinx configuration of the API reference, built from the docstrings (numpydoc style).

Build: ``sphinx-build -W -b html docs/api build/api`` (``tests/test_docs.py`` does, warnings as errors).
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

project = "splitprec"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
