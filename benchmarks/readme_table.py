"""Regenerate the README's GEMM table from a benchmarks/results/gemm-*.json file.

``python3 benchmarks/readme_table.py [RESULTS.json] [--readme README.md]`` prints the table of the
n = 8192 case (scheme, TFLOP/s, ratio to cuBLAS SGEMM, normwise error vs float64; public ``sp.matmul``
rows and anchors) with the run's date and device, then every case for the multi-part schemes; with ``--readme`` it replaces the text between ``<!-- gemm-table:start -->`` and
``<!-- gemm-table:end -->``. Nobody types the numbers.
"""
import argparse
import json
import pathlib
import re

START, END = "<!-- gemm-table:start -->", "<!-- gemm-table:end -->"
RESULTS = pathlib.Path(__file__).parent / "results"


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", help="results JSON (default: the newest gemm-*.json)")
    parser.add_argument("--readme", help="file whose text between the markers is replaced")
    args = parser.parse_args(argv)
    path = pathlib.Path(args.results) if args.results else \
        max(RESULTS.glob("gemm-*.json"), key=lambda p: json.loads(p.read_text())["date"])
    results = json.loads(path.read_text())
    text = table(results) + "\n\nAll cases (TFLOP/s (x SGEMM), error):\n\n" + sizes_table(results)
    if args.readme:
        readme = pathlib.Path(args.readme)
        pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
        if not pattern.search(readme.read_text()):
            raise ValueError(f"readme_table: {readme} has no {START} ... {END} markers")
        readme.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", readme.read_text()))
    print(text)


if __name__ == "__main__":
    main()
