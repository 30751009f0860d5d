"""Regenerate the measured tables of README.md and docs/ from benchmarks/results/*.json files.

``python3 benchmarks/readme_table.py [RESULTS.json ...] [--write ROOT]`` prints four tables: the
README's headline table (every scheme's class, its GEMM speed and error at 8192^3 and its FFT speed
and error at 4096 x 4096, with the fp64 scheme beside DGEMM, and which rows were measured before the
range work); for docs/gemm.md the n = 8192 case
(public ``sp.matmul`` rows and the anchors) and every case of the multi-part schemes; for
docs/fft.md every FFT case beside cuFFT / cupyx; for docs/fp64.md the Ozaki scheme II run; for
README.md and docs/kernels.md the GEMM shapes, each from the newest ``gemm-shapes-`` run that
measured it. Without files it takes the newest run of each kind (``gemm-``, ``fft-``,
``gemm-fp64-``) and every ``gemm-shapes-`` run; a file named replaces the newest of its kind (a
shapes run joins the others). With ``--write ROOT`` it replaces the text between
``<!-- KIND-table:start -->`` and ``<!-- KIND-table:end -->`` in ROOT's README.md (``headline``),
docs/gemm.md (``gemm``), docs/fft.md (``fft``), docs/fp64.md (``fp64``) and README.md and
docs/kernels.md (``shapes``). Nobody types the numbers.
"""
import argparse
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import splitprec  # noqa: E402
from splitprec.accuracy.classes import class_label  # noqa: E402
from splitprec.engines import plan as fft_plan  # noqa: E402

RESULTS = pathlib.Path(__file__).parent / "results"
GLOBS = {"gemm": "gemm-2*.json", "fft": "fft-2*.json", "fp64": "gemm-fp64-2*.json", "shapes": "gemm-shapes-2*.json"}
PAGES = {"headline": ("README.md",), "gemm": ("docs/gemm.md",), "fft": ("docs/fft.md",), "fp64": ("docs/fp64.md",),
         "shapes": ("README.md", "docs/kernels.md")}
FFT_SCHEMES = ("bf16x6", "tf32x3", "fp16x3")
ENGINE_ROWS = ("_sm80", "_sm90", "_cublas")     # engine-only rows: in the JSON, not in the tables
SCHEMES = ("fp16x3", "bf16x3", "tf32x3", "bf16x6", "bf16x9")
HEADLINE = ("tf32x3", "bf16x6", "bf16x9", "fp16x3", "bf16x3", "tf32", "fp16", "bf16")
FP64_SCHEME = "ozaki2_int8x14"
HEADLINE_FFT = 4096                               # the FFT case of the headline: N = 4096, 4096 transforms
# The range work (power-of-two scaling of every float32 scheme and FFT line) landed in this merge, at this
# time (UTC): results files dated before it measured the older arithmetic of the schemes it changed.
RANGE_WORK = ("8f93165", "2026-12-01T23:28:42Z")
SCALED_BEFORE_RANGE_WORK = ("fp16", "fp16x3")     # GEMM schemes that scaled rows and columns already


def _case(r):
    return r["m"], r["n"], r["k"], r["batch"]


def _source(results, path):
    return f"`{path.name}` ({results['date'][:10]}, git {results['git_sha']})"


def table(results, m=8192, n=8192, k=8192, batch=1):
    """Markdown table of one case of a results file (dict with header and "results"): the public
    ``sp.matmul`` rows and the anchors."""
    rows = [r for r in results["results"] if _case(r) == (m, n, k, batch) and not r["name"].endswith(ENGINE_ROWS)]
    sgemm = next(r["tflops"] for r in rows if r["name"] == "cublas_sgemm")
    lines = [f"{m}x{n}x{k}, N(0,1) inputs, {results['device']}, {results['date'][:10]}, "
             f"git {results['git_sha']} (`benchmarks/gemm.py`):", "",
             "| scheme / anchor | TFLOP/s | x SGEMM | rel. error vs fp64 |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -r["tflops"]):
        lines.append(f"| {r['name']} | {r['tflops']:.1f} | {r['tflops'] / sgemm:.2f} | {r['rel_error']:.1e} |")
    return "\n".join(lines)


def sizes_table(results):
    """Markdown table: per case, SGEMM and each multi-part scheme as TFLOP/s (x SGEMM), error."""
    cases = list(dict.fromkeys(_case(r) for r in results["results"]))
    named = {(_case(r), r["name"]): r for r in results["results"]}
    lines = ["| m x n x k x batch | SGEMM | " + " | ".join(SCHEMES) + " |", "|---" * (len(SCHEMES) + 2) + "|"]
    for case in cases:
        sgemm = named[case, "cublas_sgemm"]
        cells = [f"{named[case, s]['tflops']:.1f} ({named[case, s]['tflops'] / sgemm['tflops']:.2f}), "
                 f"{named[case, s]['rel_error']:.1e}" for s in SCHEMES]
        lines.append(f"| {'x'.join(map(str, case))} | {sgemm['tflops']:.1f}, {sgemm['rel_error']:.1e} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def gemm_text(results):
    return table(results) + "\n\nAll cases (TFLOP/s (x SGEMM), error):\n\n" + sizes_table(results)


def _fft_case(r):
    return r["op"], r["n"], r["batch"], r.get("taps"), r.get("filters")


def _fft_label(r):
    """The op and plan of an FFT row: launches of the fused kernel, or Bluestein; a convolution's filter."""
    if r["op"] == "fftconvolve":
        return f"fftconvolve, {r['taps']} taps, {r['filters']} filter(s) (x cupyx)"
    n = r["n"] // 2 if r["op"] == "rfft" and r["n"] % 2 == 0 else r["n"]
    if fft_plan.factorize(n) is None:
        return f"{r['op']} (Bluestein)"
    steps = fft_plan.launches(n)
    return r["op"] + (f" ({steps} launches)" if steps > 1 else "")


def _fft_anchor(named, case):
    return next(r for (c, _), r in named.items() if c == case and r["engine"] == "cufft")


def fft_table(results):
    """Markdown table of an FFT results file: per case the anchor and each scheme's public call as
    throughput in µs (x the anchor), error, and bf16x6's latency of one call (x the anchor's)."""
    named = {(_fft_case(r), r["name"]): r for r in results["results"]}
    lines = [f"{results['device']}, {results['date'][:10]}, git {results['git_sha']} (`benchmarks/fft.py`); "
             "µs per call in a stream of calls (x the anchor), normwise error vs float64:", "",
             "| op | N × batch | anchor µs, error | " + " | ".join(f"{s} µs (x), error" for s in FFT_SCHEMES)
             + f" | {FFT_SCHEMES[0]} latency µs (x) |", "|---" * (4 + len(FFT_SCHEMES)) + "|"]
    for case in dict.fromkeys(_fft_case(r) for r in results["results"]):
        anchor = _fft_anchor(named, case)
        cells = []
        for s in FFT_SCHEMES:
            r = named.get((case, s))
            cells.append(f"{r['seconds'] * 1e6:.0f} ({anchor['seconds'] / r['seconds']:.2f}), {r['rel_error']:.1e}"
                         if r else "")
        mine = named[case, FFT_SCHEMES[0]]
        lines.append(f"| {_fft_label(mine)} | {case[1]} × {case[2]} | {anchor['seconds'] * 1e6:.0f}, "
                     f"{anchor['rel_error']:.1e} | " + " | ".join(cells) + f" | {mine['latency_seconds'] * 1e6:.0f} "
                     f"({anchor['latency_seconds'] / mine['latency_seconds']:.2f}) |")
    return "\n".join(lines)


def _fp64_rows(results):
    """``{(name, n): row}`` of an fp64 run; ``n`` is the square size, or "error" for the
    m = n = 1024 rows whose error is against the exact product."""
    return {(r["name"], r["n"] if r.get("reference") != "exact" else "error"): r for r in results["results"]}


def fp64_table(results):
    """Markdown tables of a ``benchmarks/gemm_fp64.py`` run: TFLOP/s (x DGEMM) per square size and
    scheme, then the normwise error against the exact product."""
    rows = _fp64_rows(results)
    names = list(dict.fromkeys(name for name, n in rows if n != "error" and name != "cublas_dgemm"))
    sizes = sorted({n for _, n in rows if n != "error"})
    lines = [f"{results['device']}, {results['date'][:10]}, git {results['git_sha']} (`benchmarks/gemm_fp64.py`); "
             "TFLOP/s = 2n³/t (x DGEMM):", "", "| n | cuBLAS DGEMM | " + " | ".join(names) + " |",
             "|---" * (len(names) + 2) + "|"]
    for n in sizes:
        dgemm = rows["cublas_dgemm", n]["tflops"]
        lines.append(f"| {n} | {dgemm:.1f} | " + " | ".join(
            f"{rows[s, n]['tflops']:.1f} ({rows[s, n]['tflops'] / dgemm:.2f})" if (s, n) in rows else "" for s in names) + " |")
    exact = [name for name, n in rows if n == "error"]
    first = rows[exact[0], "error"]
    lines += ["", f"Normwise error against the exact product, {first['m']}x{first['n']}x{first['k']}:", "",
              "| " + " | ".join(exact) + " |", "|---" * len(exact) + "|",
              "| " + " | ".join(f"{rows[s, 'error']['rel_error']:.2e}" for s in exact) + " |"]
    return "\n".join(lines)


def _before_range_work(results):
    """True when a results file was measured before the range work landed (``RANGE_WORK``)."""
    return results["date"] < RANGE_WORK[1]


def _predating(gemm, fft, name):
    """Which figures of scheme ``name``'s row were measured before the range work: "GEMM", "FFT"."""
    return [kind for kind, results, changed in (("GEMM", gemm, name not in SCALED_BEFORE_RANGE_WORK),
                                                ("FFT", fft, name in FFT_SCHEMES))
            if changed and _before_range_work(results)]


def _range_note(gemm, fft):
    """The sentence under the headline table naming the rows (marked †) that predate the range work."""
    rows = {name: _predating(gemm, fft, name) for name in HEADLINE}
    marked = [f"`{name}` ({' and '.join(kinds)})" for name, kinds in rows.items() if kinds]
    if not marked:
        return ""
    commit, date = RANGE_WORK
    return (f"Rows marked † predate the range work (power-of-two scaling of every float32 scheme's rows and "
            f"columns and of every FFT line, commit {commit}, {date[:10]}) and are not re-measured yet: "
            f"{', '.join(marked)}. On the GPU that scaling adds exponent passes over the data "
            "(docs/gemm.md, docs/fft.md); the fp16 schemes scaled their GEMM operands already, and the "
            "anchors and the fp64 rows are unaffected.")


def headline(gemm, fft, fp64, paths):
    """The README's table: per scheme the class (``accuracy.classes.class_label``), GEMM TFLOP/s
    (x SGEMM) and error at 8192^3, FFT µs (x cuFFT) and error at 4096 x 4096; then cuBLAS SGEMM /
    cuFFT, and the fp64 scheme beside DGEMM; rows measured before the range work marked †."""
    g = {r["name"]: r for r in gemm["results"] if _case(r) == (8192, 8192, 8192, 1)}
    named = {(_fft_case(r), r["name"]): r for r in fft["results"]}
    case = ("fft", HEADLINE_FFT, HEADLINE_FFT, None, None)
    cufft, sgemm = _fft_anchor(named, case), g["cublas_sgemm"]

    def fft_cells(r):
        return f"{r['seconds'] * 1e6:.0f} ({cufft['seconds'] / r['seconds']:.2f}x) | {r['rel_error']:.1e}" if r else "— | —"

    lines = ["| scheme | parts, products | accuracy | GEMM TFLOP/s (x SGEMM) | GEMM error | FFT µs (x cuFFT) | FFT error |",
             "|---|---|---|---|---|---|---|"]
    for name in HEADLINE:
        d, r = splitprec.dtype(name), g[name]
        mark = "†" if _predating(gemm, fft, name) else ""
        lines.append(f"| `{name}`{mark} | {d.terms} {d.base}, {len(d.products)} | {class_label(name)} | "
                     f"{r['tflops']:.1f} ({r['tflops'] / sgemm['tflops']:.2f}x) | {r['rel_error']:.1e} | "
                     f"{fft_cells(named.get((case, name)))} |")
    lines.append(f"| cuBLAS SGEMM, cuFFT | | fp32 | {sgemm['tflops']:.1f} (1.00x) | {sgemm['rel_error']:.1e} | "
                 f"{fft_cells(cufft)} |")
    rows = _fp64_rows(fp64)
    mine, dgemm = rows[f"{FP64_SCHEME}_gemm_each", 8192], rows["cublas_dgemm", 8192]
    error, dgemm_error = rows[FP64_SCHEME, "error"], rows["cublas_dgemm", "error"]
    d = splitprec.dtype(FP64_SCHEME)
    lines += [f"| `{FP64_SCHEME}` (float64) | {d.terms} {d.base}, {len(d.products)} | {class_label(FP64_SCHEME)} | "
              f"{mine['tflops']:.1f} ({mine['tflops'] / dgemm['tflops']:.2f}x DGEMM) | {error['rel_error']:.1e} | — | — |",
              f"| cuBLAS DGEMM | | fp64 | {dgemm['tflops']:.1f} | {dgemm_error['rel_error']:.1e} | — | — |"]
    settled = g["cublas_dgemm"]["tflops"]
    note = _range_note(gemm, fft)
    return "\n".join([
        f"{gemm['device']}. GEMM {_source(gemm, paths['gemm'])} at 8192³; FFT {_source(fft, paths['fft'])}, "
        f"{HEADLINE_FFT} transforms of length {HEADLINE_FFT}, µs per call in a stream of calls; fp64 "
        f"{_source(fp64, paths['fp64'])} at 8192³. Errors: normwise against a float64 product or "
        f"transform (fp64 rows: against the exact product at {error['m']}x{error['n']}x{error['k']}), "
        "N(0,1) inputs.", "", *lines, "",
        *([note, ""] if note else []),
        "The fp64 rows were timed after two warm-up calls, the others after half a second of the same call: a "
        "GPU not yet settled at its power limit reads fast. Against the settled DGEMM of the GEMM run "
        f"({settled:.1f} TFLOP/s) `{FP64_SCHEME}` would be {mine['tflops'] / settled:.2f}x."])


def replace_between_markers(page, kind, text):
    """Put ``text`` between the ``<!-- {kind}-table:start -->`` and ``end`` markers of ``page``."""
    start, end = f"<!-- {kind}-table:start -->", f"<!-- {kind}-table:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(page.read_text()):
        raise ValueError(f"readme_table: {page} has no {start} ... {end} markers")
    page.write_text(pattern.sub(lambda _: f"{start}\n{text}\n{end}", page.read_text()))


def shapes_table(runs):
    """Per shape of the ``gemm-shapes`` runs ``[(path, results)]``, from the newest run that measured
    it: SGEMM's time, the fastest fp32-class scheme and fp16x3 as x SGEMM, and ``precision="fp32"`` as
    x SGEMM and x the faster of SGEMM and that scheme, by event time and by wall time of calls back to
    back."""
    fp32_class = [name for name in splitprec.dtypes("float32") if splitprec.dtype(name).fp32_class]
    runs = sorted(runs, key=lambda run: run[1]["date"])
    newest = {}
    for path, results in runs:
        for r in results["results"]:
            shape = (r["m"], r["n"], r["k"], r["batch"])
            if newest.get(shape, (None, None))[0] is not path:
                newest[shape] = (path, {})
            newest[shape][1][r["name"]] = r
    order = dict.fromkeys((r["m"], r["n"], r["k"], r["batch"]) for _, results in runs for r in results["results"])
    cited = [(path, results) for path, results in runs if any(newest[shape][0] is path for shape in newest)]
    lines = [f"{runs[-1][1]['device']}, per shape the newest of "
             + ", ".join(f"`{path.name}` ({results['date'][:10]})" for path, results in cited)
             + " (column run: its git sha); µs by CUDA events after 0.5 s of warm-up (median of 10; from "
             "the 2026-12-05 runs on, each call queued behind a spin kernel, so that the events time the "
             "GPU's work rather than the host's), wall: per call in a loop of calls ended by one synchronize.", "",
             "| m x n x k x batch | run | SGEMM µs | fastest fp32-class scheme (x SGEMM) | fp16x3 (x SGEMM) | "
             "`precision=\"fp32\"` x SGEMM | x the faster path (event / wall) |", "|---|---|---|---|---|---|---|"]
    for shape in order:
        path, here = newest[shape]
        sha = dict(runs)[path]["git_sha"]
        sgemm, fp32 = here["cublas_sgemm"], here["precision_fp32"]
        best = min((here[name] for name in fp32_class if name in here), key=lambda r: r["event_us"])
        faster = {t: min(sgemm[t], best[t]) / fp32[t] for t in ("event_us", "wall_us")}
        lines.append(f"| {' x '.join(map(str, shape))} | {sha} | {sgemm['event_us']:.0f} | {best['name']} "
                     f"{sgemm['event_us'] / best['event_us']:.2f} | {sgemm['event_us'] / here['fp16x3']['event_us']:.2f} | "
                     f"{sgemm['event_us'] / fp32['event_us']:.2f} | {faster['event_us']:.2f} / {faster['wall_us']:.2f} |")
    return "\n".join(lines)


def _kind(results):
    if "event_us" in results["results"][0]:
        return "shapes"
    if any(r["name"].startswith("ozaki2") for r in results["results"]):
        return "fp64"
    return "gemm" if results["results"][0]["op"] == "gemm" else "fft"


def tables(paths):
    """``{kind: markdown}`` for the results files ``{"gemm": path, "fft": path, "fp64": path}``."""
    runs = {kind: json.loads(path.read_text()) for kind, path in paths.items() if kind != "shapes"}
    shapes = [(path, json.loads(path.read_text())) for path in paths.get("shapes", ())]
    return {"headline": headline(runs["gemm"], runs["fft"], runs["fp64"], paths), "gemm": gemm_text(runs["gemm"]),
            "fft": fft_table(runs["fft"]), "fp64": fp64_table(runs["fp64"]),
            **({"shapes": shapes_table(shapes)} if shapes else {})}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", help="results JSON files (default: the newest of each kind)")
    parser.add_argument("--write", metavar="ROOT", help="folder whose README.md and docs/ pages get the tables")
    args = parser.parse_args(argv)
    paths = {kind: max(RESULTS.glob(pattern), key=lambda p: json.loads(p.read_text())["date"])
             for kind, pattern in GLOBS.items() if kind != "shapes"}
    paths["shapes"] = sorted(RESULTS.glob(GLOBS["shapes"]))
    for path in map(pathlib.Path, args.results):
        kind = _kind(json.loads(path.read_text()))
        if kind == "shapes":
            paths["shapes"] = [*paths["shapes"], path]
        else:
            paths[kind] = path
    for kind, text in tables(paths).items():
        for page in PAGES[kind] if args.write else ():
            replace_between_markers(pathlib.Path(args.write) / page, kind, text)
        print(text + "\n")


if __name__ == "__main__":
    main()
