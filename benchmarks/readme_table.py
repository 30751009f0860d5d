"""Regenerate the README's GEMM and FFT tables from benchmarks/results/{gemm,fft}-*.json files.

``python3 benchmarks/readme_table.py [RESULTS.json ...] [--readme README.md]`` prints, for a GEMM
run, the table of the n = 8192 case (scheme, TFLOP/s, ratio to cuBLAS SGEMM, normwise error vs
float64; public ``sp.matmul`` rows and anchors) with the run's date and device, then every case for
the multi-part schemes; for an FFT run, every case beside cuFFT / cupyx (throughput, ratio, error,
latency). Without files it takes the newest of each kind. With ``--readme`` it replaces the text
between ``<!-- gemm-table:start -->`` and ``<!-- gemm-table:end -->`` (``fft-table`` for the FFT).
Nobody types the numbers.
"""
import argparse
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from splitprec.engines import plan as fft_plan  # noqa: E402

RESULTS = pathlib.Path(__file__).parent / "results"
FFT_SCHEMES = ("bf16x6", "tf32x3", "fp16x3")


ENGINE_ROWS = ("_sm80", "_sm90", "_cublas")     # engine-only rows: in the JSON, not in the README
SCHEMES = ("fp16x3", "bf16x3", "tf32x3", "bf16x6", "bf16x9")


def _case(r):
    return r["m"], r["n"], r["k"], r["batch"]


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


def fft_table(results):
    """Markdown table of an FFT results file: per case the anchor and each scheme's public call as
    throughput in µs (x the anchor), error, and bf16x6's latency of one call (x the anchor's)."""
    named = {(_fft_case(r), r["name"]): r for r in results["results"]}
    lines = [f"{results['device']}, {results['date'][:10]}, git {results['git_sha']} (`benchmarks/fft.py`); "
             "µs per call in a stream of calls (x the anchor), normwise error vs float64:", "",
             "| op | N × batch | anchor µs, error | " + " | ".join(f"{s} µs (x), error" for s in FFT_SCHEMES)
             + f" | {FFT_SCHEMES[0]} latency µs (x) |", "|---" * (4 + len(FFT_SCHEMES)) + "|"]
    for case in dict.fromkeys(_fft_case(r) for r in results["results"]):
        anchor = next(r for (c, _), r in named.items() if c == case and r["engine"] == "cufft")
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


def replace_between_markers(readme, kind, text):
    """Put ``text`` between the ``<!-- {kind}-table:start -->`` and ``end`` markers of ``readme``."""
    start, end = f"<!-- {kind}-table:start -->", f"<!-- {kind}-table:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(readme.read_text()):
        raise ValueError(f"readme_table: {readme} has no {start} ... {end} markers")
    readme.write_text(pattern.sub(lambda _: f"{start}\n{text}\n{end}", readme.read_text()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", help="results JSON files (default: the newest gemm-*.json and fft-*.json)")
    parser.add_argument("--readme", help="file whose text between the markers is replaced")
    args = parser.parse_args(argv)
    paths = [pathlib.Path(p) for p in args.results] or [
        max(RESULTS.glob(f"{kind}-2*.json"), key=lambda p: json.loads(p.read_text())["date"]) for kind in ("gemm", "fft")]
    for path in paths:
        results = json.loads(path.read_text())
        if results["results"][0]["op"] == "gemm":
            kind, text = "gemm", table(results) + "\n\nAll cases (TFLOP/s (x SGEMM), error):\n\n" + sizes_table(results)
        else:
            kind, text = "fft", fft_table(results)
        if args.readme:
            replace_between_markers(pathlib.Path(args.readme), kind, text)
        print(text + "\n")


if __name__ == "__main__":
    main()
