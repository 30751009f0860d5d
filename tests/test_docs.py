"""The API reference (docs/api, Sphinx + numpydoc over the public docstrings) builds without a
single warning, and the docs pages the README links to exist."""
import pathlib
import re
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_api_reference_builds_without_warnings(tmp_path):
    sphinx_cmd = pytest.importorskip("sphinx.cmd.build")
    pytest.importorskip("numpydoc")
    source = tmp_path / "api"
    shutil.copytree(ROOT / "docs" / "api", source, ignore=shutil.ignore_patterns("generated"))
    warnings = tmp_path / "warnings.txt"
    status = sphinx_cmd.build_main(["-W", "--keep-going", "-q", "-b", "html", "-w", str(warnings),
                                    str(source), str(tmp_path / "html")])
    assert status == 0, warnings.read_text()
    page = (tmp_path / "html" / "generated" / "splitprec.matmul.html").read_text()
    assert "Parameters" in page and "Raises" in page        # numpydoc sections were rendered


def test_every_local_link_of_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert missing == []
