"""Sphinx configuration of the API reference, built from the docstrings (numpydoc style).

Build: ``sphinx-build -W -b html docs/api build/api`` (``tests/test_docs.py`` does, warnings as errors).
It documents the installed package (``pip install -e .``) and leaves ``sys.path`` alone: the test
suite's ``--doctest-modules`` imports this file, and a path added here would let the docs' examples
import modules that a user's interpreter cannot.
"""
project = "splitprec"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
