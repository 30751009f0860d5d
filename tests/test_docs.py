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


def _flat(text):
    return " ".join(text.split())


def test_arrays_page_promotion_order_and_scheme_hashing_regression():
    """docs/arrays.md said a promotion tie went to "the unscaled scheme" (every float32 scheme is
    pow2-scaled) and that ``a.dtype in {np.float32}`` held (the scalar type hashes apart from the
    dtype): the stated order is ``promote``'s, and the stated set membership holds."""
    import numpy as np
    import splitprec as sp
    from splitprec.array.core import promote
    page = _flat((ROOT / "docs" / "arrays.md").read_text())
    stated = re.search(r"From most to least accurate: ([\w, ]+)\.", page).group(1).split(", ")
    schemes = [sp.dtype(n) for n in sp.dtypes("float32")]
    order, left = [], list(schemes)
    while left:
        order.append(promote(*left).name)
        left = [d for d in left if d.name != order[-1]]
    assert stated == order
    for name in ("tf32x3", "fp16x3"):        # the tie the page names, with the spans it quotes
        assert f"`{name}` {sp.dtype(name).exact_span()}" in page
    a = sp.asarray([1.0], dtype="bf16x9")
    membership = re.search(r"so `(a\.dtype in \{[^}]*\})` holds", page).group(1)
    assert eval(membership, {"a": a, "np": np}) is True
    assert (a.dtype in {np.float32}) is False and "(not `{np.float32}`" in page


def test_arrays_page_split_cache_is_per_axis_for_every_scheme_regression(monkeypatch):
    """docs/arrays.md said only ``fp16`` and ``fp16x3`` were pow2 (cached per reduction axis) and
    that views took their parts from the array they view: every float32 scheme is pow2 now, and a
    view splits anew on cpu."""
    import numpy as np
    import splitprec as sp
    import splitprec.array.core as core
    page = _flat((ROOT / "docs" / "arrays.md").read_text())
    assert "every float32 scheme is `pow2`" in page and "splits anew on cpu" in page
    assert {sp.dtype(n).scaling for n in sp.dtypes("float32")} == {"pow2"}
    calls, real = [], core.split
    monkeypatch.setattr(core, "split", lambda *a, **k: calls.append(k.get("axis")) or real(*a, **k))
    w = sp.asarray(np.arange(16, dtype=np.float32).reshape(4, 4), dtype="bf16x6")
    x = np.ones((4, 2), np.float32)
    w @ x, w @ x
    assert len(calls) == 1                    # cached
    np.ones((2, 4), np.float32) @ w
    assert len(calls) == 2                    # the other reduction axis: its own parts
    w.T @ x
    assert len(calls) == 3                    # a view: split anew


def test_gemm_page_cpu_engine_figures_are_its_results_file_regression():
    """docs/gemm.md said the whole product took 1.2-1.4x its floor from 2048³ on; its results file
    had fp16x3 at 1.6x at 2048³. Every figure of the paragraph is the file's."""
    page = _flat((ROOT / "docs" / "gemm.md").read_text())
    cited = re.search(r"`benchmarks/results/(cpu-engine-[\w-]+\.json)`", page).group(1)
    rows = json.loads((ROOT / "benchmarks" / "results" / cited).read_text())["results"]
    cube = {(r["name"], r["size"]): r for r in rows if r["op"] == "matmul" and r["size"].endswith("^3")}
    for name, figures in re.findall(r"(tf32x3|bf16x6|fp16x3|bf16x9)(?: \(the default fp32 scheme\))? "
                                    r"([\d.]+ / [\d.]+ / [\d.]+)x", page):
        assert figures.split(" / ") == [f"{cube[name, s]['x_numpy']:.1f}" for s in ("512^3", "2048^3", "4096^3")]
    named = [r for r in cube.values() if r["name"] in ("tf32x3", "bf16x6", "fp16x3", "bf16x9")]
    spread = lambda values: tuple(f"{v:.1f}" for v in (min(values), max(values)))  # noqa: E731
    large = [1 / r["of_floor"] for r in named if r["size"] != "512^3"]
    small = [1 / r["of_floor"] for r in named if r["size"] == "512^3"]
    assert re.search(r"takes ([\d.]+)-([\d.]+)x its floor at 2048³ and 4096³", page).groups() == spread(large)
    assert re.search(r"and ([\d.]+)-([\d.]+)x at 512³", page).groups() == spread(small)
    for name, count in (("bf16x9", "nine"), ("bf16x6", "six")):
        floors = [cube[name, s]["floor_seconds"] / cube[name, s]["numpy_seconds"] for s in ("512^3", "2048^3", "4096^3")]
        assert re.search(rf"{name}'s {count}(?: calls alone take)? ([\d.]+)-([\d.]+)x", page).groups() == spread(floors)
    both = [r["of_floor_and_split"] for r in named if r["size"] != "4096^3"]
    assert re.search(r"takes ([\d.]+)-([\d.]+) of its floor and its split together", page).groups() == \
        tuple(f"{v:.2f}" for v in (min(both), max(both)))
    shares = [100 * r["split_seconds"] / r["seconds"] for r in named if r["size"] == "512^3"]
    assert re.search(r"(\d+)-(\d+)% of the time at 512³", page).groups() == tuple(f"{v:.0f}" for v in (min(shares), max(shares)))


def test_tracking_page_tightness_table_is_what_the_report_computes_regression():
    """docs/tracking.md's tightness table (249 / 161, first product 151x / 94x) had moved to 250 /
    162 and 150x / 93.5x: the stated medians are chain_tightness's, within 5% (the products' actual
    errors, and so the medians, move a little with the machine's BLAS)."""
    from splitprec.accuracy import tracking_report as t
    page = _flat((ROOT / "docs" / "tracking.md").read_text())
    rigorous = t.chain_tightness(t.CHAINS["with products"], True)
    probabilistic = t.chain_tightness(t.CHAINS["with products"], "probabilistic")
    elementwise = t.chain_tightness(t.CHAINS["elementwise"], True)
    close = lambda stated, measured: abs(float(stated) - measured) <= 0.05 * measured  # noqa: E731
    row = re.search(r"\| elementwise \([^|]*\) \| ([\d.]+) \| ([\d.]+) \|", page).groups()
    assert row[0] == row[1] and close(row[0], elementwise[-1][1])      # no probabilistic elementwise rule
    row = re.search(r"\| with products \([^|]*\| ([\d.]+) \| ([\d.]+) \|", page).groups()
    assert close(row[0], rigorous[-1][1]) and close(row[1], probabilistic[-1][1])
    first = re.search(r"first product alone is at ([\d.]+)× \(rigorous\) and ([\d.]+)×", page).groups()
    assert rigorous[0][0] == "matmul"
    assert close(first[0], rigorous[0][1]) and close(first[1], probabilistic[0][1])


def test_tracking_page_integer_inputs_regression():
    """docs/tracking.md said integers up to 2^53 entered with bound 0: those float32 cannot hold
    are rounded and enter with their exact rounding error; beyond 2^53 they are refused."""
    import numpy as np
    import splitprec as sp
    page = _flat((ROOT / "docs" / "tracking.md").read_text())
    assert "integers that float32 holds enter with bound 0; other integers up to 2^53" in page
    tracked = lambda x: sp.asarray(x, dtype="bf16x9", track_error=True)  # noqa: E731
    assert tracked(np.int64([2 ** 24, 2 ** 53])).error_bound.tolist() == [0.0, 0.0]
    assert tracked(np.int64([2 ** 24 + 1, 2 ** 53 - 1])).error_bound.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="beyond 2\\*\\*53"):
        tracked(np.int64([2 ** 53 + 1]))


def test_ozaki_page_quotes_the_float32_refusal_regression():
    """docs/ozaki.md quoted the float32 refusal of ``ozaki2_int8x14`` as it read before the input
    rule named the operation, the argument and the integers it takes: the quote is the message."""
    import numpy as np
    import splitprec as sp
    page = _flat((ROOT / "docs" / "ozaki.md").read_text())
    quoted = re.search(r"raise `TypeError` \(\"(.*?)\"\) rather", page).group(1)
    with pytest.raises(TypeError) as error:
        sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2)), dtype="ozaki2_int8x14")
    assert quoted == str(error.value)
