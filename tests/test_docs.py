"""The API reference (docs/api, Sphinx + numpydoc over the public docstrings) builds without a
single warning, the docs pages the README links to exist, and the docs' examples run from any folder."""
import contextvars
import json
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


def test_every_test_the_docs_and_docstrings_name_exists_regression():
    """docs/conventions.md named a tests/test_conventions.py that never existed, and docstrings named
    renamed tests: each ``tests/<file>.py`` or ``tests/<file>.py::<test>`` that README.md, docs/,
    accuracy/ or splitprec's modules cite must be there."""
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "accuracy").glob("*.py"),
             *(ROOT / "splitprec").glob("*.py"), *(ROOT / "splitprec" / "engines").rglob("*.py")]
    missing = []
    for page in pages:
        for file, test in re.findall(r"tests/(test_\w+\.py)(?:::(\w+))?", page.read_text()):
            path = ROOT / "tests" / file
            if not path.exists() or test and not re.search(rf"^def {test}\b", path.read_text(), re.M):
                missing.append(f"{page.relative_to(ROOT)} -> tests/{file}{'::' + test if test else ''}")
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


# Where the docs name the scheme a call that names none runs: (page, pattern of the name, target).
DOCUMENTED_DEFAULTS = [
    ("docs/conventions.md", r"float64\s+operands\s+the\s+float64\s+default\s+\(`precision=\"fp64\"`:\s+`(\w+)`",
     "float64"),
    ("README.md", r"`(\w+)`,\s+the\s+float64\s+default", "float64"),
    ("docs/arrays.md", r"new\s+float32\s+arrays\s+get\s+the\s+default\s+scheme\s+\(`(\w+)`\)", "float32"),
    ("docs/fft.md", r"\(default\s+`(\w+)`,\s+the\s+cheapest\s+fp32-class\s+scheme\)", "float32"),
]


@pytest.mark.parametrize("page, pattern, target", DOCUMENTED_DEFAULTS)
def test_docs_name_the_default_scheme_the_code_runs_regression(page, pattern, target):
    """docs/conventions.md named the float64 default and no test compared it with the code's."""
    from splitprec._defaults import resolve
    stated = re.findall(pattern, (ROOT / page).read_text())
    assert stated, f"{page} no longer names the {target} default as {pattern!r} expects"
    built_in = contextvars.Context().run(resolve, None, None, target=target, op="default")   # no default set
    assert set(stated) == {built_in.name}


def _ratio_range(values):
    return f"{min(values):.2f}", f"{max(values):.2f}"


def test_fft_page_ranges_are_its_results_files_regression():
    """docs/fft.md said `bf16x6` ran at 0.3-0.6x cuFFT's error (0.93x at N = 4095 in its own table),
    fftconvolve at 0.3-0.5x cupyx's (0.60x at 129 taps), and that the line scaling's cost on the GPU
    "has not been measured yet" beside a results file that measured it: every range the page states
    is the min-max of the file it rests on."""
    page = (ROOT / "docs" / "fft.md").read_text()
    results = ROOT / "benchmarks" / "results"
    sha = re.search(r"<!-- fft-table:start -->\n.*?git (\w+)", page).group(1)
    (path,) = results.glob(f"fft-2*-{sha}.json")
    rows = json.loads(path.read_text())["results"]
    case = lambda r: (r["op"], r["n"], r["batch"], r.get("taps"), r.get("filters"))   # noqa: E731
    anchor = {case(r): r for r in rows if r["engine"] == "cufft"}
    mine = lambda names, ops: [r for r in rows if r["name"] in names and r["op"] in ops]  # noqa: E731
    error = lambda names, ops: _ratio_range([r["rel_error"] / anchor[case(r)]["rel_error"]  # noqa: E731
                                             for r in mine(names, ops)])
    stated = re.search(r"`bf16x6` at ([\d.]+)-([\d.]+)x of it, `tf32x3` and\s+`fp16x3` at ([\d.]+)-([\d.]+)x", page)
    assert stated.groups() == error({"bf16x6"}, {"fft", "rfft"}) + error({"tf32x3", "fp16x3"}, {"fft"})
    stated = re.search(r"`fftconvolve` is ([\d.]+)-([\d.]+)x cupyx's at ([\d.]+)-([\d.]+)x its error", page)
    conv = mine({"bf16x6"}, {"fftconvolve"})
    assert stated.groups() == _ratio_range([anchor[case(r)]["seconds"] / r["seconds"] for r in conv]) + \
        error({"bf16x6"}, {"fftconvolve"})
    cited = re.search(r"`benchmarks/results/(fft-line-scaling-[\w-]+\.json)`", page).group(1)
    scaling = json.loads((results / cited).read_text())["results"]
    stated = re.search(r"schemes ran at ([\d.]+)-([\d.]+)x cuFFT's speed;.*?at ([\d.]+)-([\d.]+)x", page, re.S)
    assert stated.groups() == _ratio_range([r["cufft_us"] / r["separate_passes_us"] for r in scaling]) + \
        _ratio_range([r["cufft_us"] / r["in_kernel_us"] for r in scaling])
    assert "not been measured yet" not in page


def test_report_page_names_every_option_of_the_report_command_regression():
    """docs/report.md listed the options but not ``--force`` / ``--overwrite``, which ``--help`` shows
    and without which an --out holding a report is refused (exit status 2)."""
    from splitprec.accuracy import cli
    commands = next(a for a in cli._parser()._actions if a.dest == "command").choices
    options = [o for a in commands["report"]._actions for o in a.option_strings if o not in ("-h", "--help")]
    page = (ROOT / "docs" / "report.md").read_text()
    assert options and [o for o in options if f"`{o}" not in page] == []
    assert "exit status 2" in page
