"""Regenerate the README's GEMM table from a benchmarks/results/gemm-*.json file.

``python3 benchmarks/readme_table.py [RESULTS.json] [--readme README.md]`` prints the table of the
n = 8192 case (scheme, TFLOP/s, ratio to cuBLAS SGEMM, normwise error vs float64) with the run's date
and device; with ``--readme`` it replaces the text between ``<!-- gemm-table:start -->`` and
``<!-- gemm-table:end -->``. Nobody types the numbers.
"""
import argparse
import json
import pathlib
import re

START, END = "<!-- gemm-table:start -->", "<!-- gemm-table:end -->"
RESULTS = pathlib.Path(__file__).parent / "results"


def table(results, m=8192, n=8192, k=8192, batch=1):
    """Markdown table of one case of a results file (dict with header and "results")."""
    rows = [r for r in results["results"] if (r["m"], r["n"], r["k"], r["batch"]) == (m, n, k, batch)]
    sgemm = next(r["tflops"] for r in rows if r["name"] == "cublas_sgemm")
    lines = [f"{m}x{n}x{k}, N(0,1) inputs, {results['device']}, {results['date'][:10]}, "
             f"git {results['git_sha']} (`benchmarks/gemm.py`):", "",
             "| scheme / anchor | TFLOP/s | x SGEMM | rel. error vs fp64 |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -r["tflops"]):
        lines.append(f"| {r['name']} | {r['tflops']:.1f} | {r['tflops'] / sgemm:.2f} | {r['rel_error']:.1e} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", help="results JSON (default: the newest gemm-*.json)")
    parser.add_argument("--readme", help="file whose text between the markers is replaced")
    args = parser.parse_args(argv)
    path = pathlib.Path(args.results) if args.results else \
        max(RESULTS.glob("gemm-*.json"), key=lambda p: json.loads(p.read_text())["date"])
    text = table(json.loads(path.read_text()))
    if args.readme:
        readme = pathlib.Path(args.readme)
        pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
        if not pattern.search(readme.read_text()):
            raise ValueError(f"readme_table: {readme} has no {START} ... {END} markers")
        readme.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", readme.read_text()))
    print(text)


if __name__ == "__main__":
    main()
