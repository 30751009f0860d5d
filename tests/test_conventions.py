"""docs/conventions.md: every example on the page runs and prints what the page says."""
import doctest
import os

import pytest

PAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "conventions.md")


def test_conventions_page_examples_run():
    pytest.importorskip("jax")                       # the page reads a jax array (the test extra has jax)
    result = doctest.testfile(PAGE, module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 20 and result.failed == 0
