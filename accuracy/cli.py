"""Command line: ``splitprec report [--quick | --level L] [--schemes ...] [--ops gemm,fft,rfft] [--sizes ...]``.

Runs the accuracy suite on the CPU engine (and on the GPU engine when cupy sees a device, then
also comparing the two), prints a summary table and then the tightness of tracked error bounds
(accuracy.tracking_report: on bf16x9, or on the float32-target schemes of --schemes, left out with
a one-line note when it names none), writes report.md, report.html,
report.json and PNG plots into --out (open report.html), and exits with status 1 naming the
case if any bound is violated. It runs exactly the schemes of --schemes (default: every scheme
with a bound): the float32-target ones on float32 cases and FFT signals against float32 BLAS and a
float32 FFT, the fp64 ones (ozaki2_int8x12..18, ozaki2_int8_adaptive) on float64 GEMM cases
(fp64_*) against DGEMM. An --out that cannot be written, or that already holds a report (unless
--force), is refused before anything runs.
"""
import argparse
import os
import sys
import tempfile
import time

import splitprec

from . import cases as case_registry, report, tracking_report
from .measure import gemm_schemes, gpu_available

FP64_NOTE = ("fp64 schemes (ozaki2_int8xN, ozaki2_int8_adaptive): float64 GEMM cases fp64_* against "
             "numpy's float64 matmul (DGEMM), no FFT; plots fp64_error_vs_k.png and fp64_error_vs_span.png, "
             "and a panel of their own in bound_tightness.png")


def _csv(kind):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {kind} list")
        return items
    return parse


def _sizes(text):
    """Comma-separated positive integers (k for GEMM, N for the FFT)."""
    sizes = []
    for item in _csv("size")(text):
        try:
            size = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"sizes must be positive integers, got {item!r}") from None
        if size < 1:
            raise argparse.ArgumentTypeError(f"sizes must be positive integers, got {size}")
        sizes.append(size)
    return sizes


REPORT_FILES = ("report.md", "report.html", "report.json")


def _check_out(out, force, parser):
    """Refuse (exit 2) an ``--out`` that is a file, cannot be written, or holds a report (without
    ``--force``), before anything runs; creates the folder."""
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error(f"--out {out!r} is an existing file; expected a folder (created if missing)")
    found = [name for name in REPORT_FILES if os.path.exists(os.path.join(out, name))]
    if found and not force:
        parser.error(f"--out {out!r} already holds a report ({', '.join(found)}); pass --force to "
                     f"overwrite it, or choose another --out")
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as err:
        parser.error(f"--out {out!r} is not writable: {err.strerror or err}")


def _parser():
    parser = argparse.ArgumentParser(prog="splitprec", description="splitprec accuracy tools")
    parser.add_argument("--version", action="version", version=f"splitprec {splitprec.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="run the accuracy suite and write a report",
                         description=__doc__.split("\n\n")[1])
    rep.add_argument("--quick", action="store_true", help="small suite (< 60 s on 2 CPU cores); "
                     "same as --level quick")
    rep.add_argument("--level", choices=("quick", "ci", "full"), default=None,
                     help="suite: quick, ci (what the tests run) or full (default; k up to 65536)")
    rep.add_argument("--schemes", type=_csv("scheme"), default=None,
                     help="comma-separated scheme names, run as given (default: every bounded scheme: "
                     f"{', '.join(gemm_schemes('float32'))}; for float64 operands "
                     f"{', '.join(gemm_schemes('float64'))})")
    rep.add_argument("--ops", type=_csv("op"), default=["gemm", "fft", "rfft"],
                     help="gemm,fft,rfft (default all)")
    rep.add_argument("--sizes", type=_sizes, default=None,
                     help="comma-separated positive k (GEMM) / N (FFT) values to run")
    rep.add_argument("--engines", type=_csv("engine"), default=None,
                     help="cpu,gpu (default: cpu, plus gpu when a CUDA device is present)")
    rep.add_argument("--out", default="report", help="output folder (default ./report): report.html "
                     "(open this), report.md, report.json (provenance and every row), PNG plots")
    rep.add_argument("--force", "--overwrite", action="store_true",
                     help="overwrite a report already in --out (without it an existing report is "
                     "refused, exit status 2)")
    rep.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    rep.set_defaults(usage=rep)             # usage errors are reported as "splitprec report: error: ..."
    return parser


def _progress(stream):
    """A one-line progress bar redrawn in place on a terminal, one line per tenth otherwise."""
    start = time.perf_counter()
    live = stream.isatty()

    def show(done, total, label):
        filled = 30 * done // max(total, 1)
        if not live and done != total and 10 * done // total == 10 * (done - 1) // total:
            return
        stream.write(f"{chr(13) if live else ''}[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} "
                     f"{time.perf_counter() - start:5.1f}s {label[:40]:<40}" + ("" if live else "\n"))
        if live and done == total:
            stream.write("\n")
        stream.flush()
    return show


def _options(args, parser):
    """Validated (schemes, ops, sizes, engines, note) from the parsed arguments."""
    if args.quick and args.level not in (None, "quick"):
        parser.error(f"--quick is --level quick; got --level {args.level} too (give one of them)")
    try:
        schemes = None if args.schemes is None else \
            list(dict.fromkeys(splitprec.dtype(s).name for s in args.schemes))
    except ValueError as err:
        parser.error(f"argument --schemes: {err}")
    ops = []
    for op in args.ops:
        if op not in case_registry.OPS:
            parser.error(f"unknown op {op!r}; expected one of {', '.join(case_registry.OPS)}")
        ops.append(op)
    note = []
    if not report.has_fft():
        for op in ("fft", "rfft"):
            if op in ops:
                ops.remove(op)
                note.append(f"{op} skipped: this splitprec has no splitprec.fft")
    sizes = args.sizes
    engines = list(dict.fromkeys(args.engines or (["cpu", "gpu"] if gpu_available() else ["cpu"])))
    for engine in engines:
        if engine not in ("cpu", "gpu"):
            parser.error(f"unknown engine {engine!r}; expected 'cpu' or 'gpu'")
    if "gpu" in engines and not gpu_available():
        parser.error("--engines gpu: no CUDA device is visible to cupy")
    _check_out(args.out, args.force, parser)
    return schemes, ops, sizes, engines, note


def report_command(args, parser):
    schemes, ops, sizes, engines, note = _options(args, parser)
    for line in note:
        print(line, file=sys.stderr)
    level = "quick" if args.quick else args.level or "full"
    results = report.run(level, schemes, ops, sizes, engines, progress=_progress(sys.stderr))
    if not results:
        parser.error(f"the schemes, ops and sizes asked for select no case at level {level!r} (the fp64 "
                     "schemes have GEMM cases only; --sizes picks among the level's k and N)")
    text = f"suite {level!r}, engines {', '.join(engines)}, ops {', '.join(ops) or 'none'}"
    if any(m.target == "float64" for m in results):
        note.append(FP64_NOTE)
    if note:
        text += "; " + "; ".join(note)
    sections = [("GPU vs CPU engine", report.gpu_vs_cpu(results))] if "gpu" in engines else []
    tracked = ("Tracked error bounds", tracking_report.section(schemes))
    paths = report.write(results, args.out, plots=not args.no_plots, note=text, sections=sections + [tracked])
    print(f"wrote {', '.join(paths)}")
    for _, section in sections:
        print(section)
    print(report.summary(results))
    for line in report.class_findings(results):
        print(line)
    print(tracked[1])
    bad = report.violations(results)
    for m in bad:
        print(f"bound violated: case {m.case!r}, scheme {m.scheme}, engine {m.engine}, "
              f"error/bound = {m.ratio!r}", file=sys.stderr)
    return 1 if bad else 0


def main(argv=None):
    """Entry point of the ``splitprec`` console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    return report_command(args, args.usage)


if __name__ == "__main__":
    raise SystemExit(main())
