"""The API reference (docs/api, Sphinx + numpydoc over the public docstrings) builds without a
single warning, the docs pages the README links to exist, and the docs' examples run from any folder."""
import pathlib
import re
import shutil
import subprocess
import sys

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


def test_docs_examples_run_from_another_working_directory_regression(tmp_path):
    """The doctests of README.md and docs/*.md, and docs/dask.md's script, import the harness as
    ``splitprec.accuracy``: run from a folder where a bare ``import accuracy`` finds nothing."""
    doctests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(ROOT / "README.md"), str(ROOT / "docs")],
                              cwd=tmp_path, capture_output=True, text=True)
    assert doctests.returncode == 0, doctests.stdout[-4000:]
    script = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "dask.md").read_text(), re.S).group(1)
    dask_example = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert dask_example.returncode == 0, dask_example.stderr[-4000:]
