"""The accuracy report: run a suite of cases on every scheme and engine, summarize, write files.

``run(level, schemes, ops, sizes, engines, progress)`` measures every (case, scheme, engine): the
float32-target schemes on the float32 cases, the fp64 schemes ``ozaki2_int8x<N>`` on the float64
GEMM cases ``fp64_*`` (native: DGEMM); ``summary(results)`` is the per-scheme table printed last
by ``splitprec report``; ``write(results, out)`` writes ``report.md``, ``report.html`` and PNG
plots (matplotlib, Agg), with one summary section per target.
"""
from dataclasses import replace
import html
import os
import statistics

import numpy as np

import splitprec

from . import cases as case_registry
from .measure import NATIVE, _normwise, exact_spectrum, gemm_schemes, measure_fft, measure_gemm
from .reference import exact_matmul

REFERENCE_SCHEMES = ("tf32", "bf16")        # drawn in the error-vs-k plot whatever is selected


def has_fft():
    """True when this splitprec provides ``splitprec.fft.fft``."""
    return hasattr(getattr(splitprec, "fft", None), "fft")


def gpu_available():
    """True when cupy imports and sees a CUDA device."""
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def select(level, ops, sizes=None, targets=case_registry.TARGETS):
    """Cases of ``level`` for ``ops`` and scheme ``targets``; with ``sizes``, only those of these
    k / n (N(0,1) cases are made for sizes the registry lacks)."""
    chosen = [c for c in case_registry.registry(level) if c.op in ops and c.target in targets]
    if sizes is None:
        return chosen
    size_of = lambda c: c.params.get("k", c.params.get("n"))
    chosen = [c for c in chosen if size_of(c) in sizes]
    have = lambda op, target, s: any(c.op == op and c.target == target and size_of(c) == s
                                     for c in chosen)
    for s in sizes:
        for target, prefix in (("float32", ""), ("float64", "fp64_")):
            if "gemm" in ops and target in targets and not have("gemm", target, s):
                chosen.append(case_registry.Case(f"{prefix}normal_k{s}", "gemm", _normal_pair(s, target),
                                                 level, {"k": s}, target))
        for op, signal in (("fft", case_registry.complex_normal), ("rfft", case_registry.normal)):
            if op in ops and "float32" in targets and not have(op, "float32", s):
                chosen.append(case_registry.Case(f"{op}_normal_n{s}", op, lambda r, n=s, f=signal: (f(r, n),),
                                                 level, {"n": s}))
    return chosen


def _normal_pair(k, target="float32"):
    size, dtype = 32 if k <= 4096 else 8, np.dtype(target).type
    return lambda rng: (case_registry.normal(rng, (size, k), dtype),
                        case_registry.normal(rng, (k, size), dtype))


def _measure_case(case, schemes, engines):
    inputs = case.inputs(seed=0)
    if case.op == "gemm":
        exact = exact_matmul(*inputs)
        with np.errstate(all="ignore"):
            native = _normwise(np.matmul(*inputs).astype(np.float64), exact)
        measure = lambda s, e: measure_gemm(*inputs, s, e, reference=exact, native=native)
    else:
        exact = exact_spectrum(inputs[0], case.op)
        native = _normwise((np.fft.rfft if case.op == "rfft" else np.fft.fft)(inputs[0]).astype(np.complex128),
                           exact)
        measure = lambda s, e: measure_fft(inputs[0], s, e, op=case.op, reference=exact, native=native)
    for scheme in schemes:
        for engine in engines:
            yield replace(measure(scheme, engine), case=case.name, params=dict(case.params))


def run(level="quick", schemes=None, ops=("gemm", "fft", "rfft"), sizes=None, engines=("cpu",), progress=None):
    """Measure every selected case on every scheme and engine; returns a list of Measurements.

    A case runs on the schemes of its target: float32 cases (and FFT signals) on the float32-target
    schemes, the float64 ``fp64_*`` GEMM cases on the fp64 schemes. ``schemes`` default: every
    scheme with a bound (:func:`accuracy.measure.gemm_schemes`). ``progress(done, total, label)``
    is called after each measurement when given.
    """
    schemes = gemm_schemes() if schemes is None else [splitprec.dtype(s).name for s in schemes]
    by_target = {}
    for s in schemes:
        by_target.setdefault(splitprec.dtype(s).target, []).append(s)
    chosen = select(level, ops, sizes, tuple(by_target))
    total = sum(len(by_target[c.target]) for c in chosen) * len(engines)
    results = []
    for case in chosen:
        with np.errstate(all="ignore"):               # NaN/inf cases are meant to produce them
            measured = list(_measure_case(case, by_target[case.target], engines))
        for m in measured:
            results.append(m)
            if progress:
                progress(len(results), total, f"{case.name} {m.scheme} {m.engine}")
    return results


def violations(results):
    """Measurements whose error exceeds the bound (or whose NaN/inf pattern differs)."""
    return [m for m in results if m.violated]


def scheme_class(scheme):
    """``"fp32"`` / ``"fp64"`` for fp32- / fp64-class schemes, ``"<fp32"`` / ``"<fp64"`` for the
    others of the float32 / float64 target (docs/bounds.md)."""
    d = splitprec.dtype(scheme)
    label = NATIVE[d.target]
    return label if getattr(d, f"{label}_class") else "<" + label


def summary_rows(results):
    """One row per (engine, op, target, scheme): class, worst ratio and its case, median error,
    median vs native (SGEMM for float32 targets, DGEMM for the fp64 schemes)."""
    groups = {}
    for m in results:
        groups.setdefault((m.engine, m.op, m.target, m.scheme), []).append(m)
    rows = []
    for (engine, op, target, scheme), ms in sorted(groups.items()):
        worst = max(ms, key=lambda m: m.ratio)
        typical = [m for m in ms if m.case.startswith(("normal_", "fp64_normal_", "fft_normal_", "rfft_normal_"))] or ms
        versus = [m.normwise / m.native for m in typical if m.native > 0]
        rows.append({"engine": engine, "op": op, "scheme": scheme, "target": target,
                     "class": scheme_class(scheme), "worst_ratio": worst.ratio,
                     "worst_case": worst.case,
                     "median_error": statistics.median(m.normwise for m in typical),
                     "vs_native": statistics.median(versus) if versus else float("nan"),
                     "cases": len(ms)})
    return rows


def ratio_text(ratio):
    """``ratio`` to 3 digits, or ``"1-2e-13"`` for ratios below 1 that would print as 1 (a bound
    attained: e.g. an entry below its row's Ozaki-II grid rounded to zero)."""
    return f"1-{1 - ratio:.1g}" if 0.9995 <= ratio < 1 else f"{ratio:.3g}"


_COLUMNS = (("engine", "engine", "{}".format), ("op", "op", "{}".format),
            ("scheme", "scheme", "{}".format), ("class", "class", "{}".format),
            ("worst error/bound", "worst_ratio", ratio_text), ("on case", "worst_case", "{}".format),
            ("median error (N(0,1))", "median_error", "{:.3g}".format),
            ("x native (fp32: SGEMM, fp64: DGEMM)", "vs_native", "{:.3g}".format),
            ("cases", "cases", "{}".format))
# (target, summary section title, text under its table)
SECTIONS = (("float32", "float32-target schemes (float32 operands; native: numpy float32 matmul, "
                        "SGEMM; class fp32 = fp32-class bound)", ""),
            ("float64", "fp64 schemes ozaki2_int8xN and ozaki2_int8_adaptive (float64 operands, cases "
                        "fp64_*; native: numpy float64 matmul, DGEMM; class fp64 = fp64-class bound, x14 "
                        "and up, and the adaptive scheme of precision='fp64')",
             "The Ozaki-II bound is relative to each row's and column's 2-norm (docs/bounds.md, "
             "section 12): on wide exponent spans an entry below 2**-Q of its row's norm rounds to "
             "zero and the bound is attained (ratios shown as 1-x are below 1 by x). "
             "ozaki2_int8_adaptive keeps every entry within DGEMM's worst-case bound (section 13)."))


def summary(results):
    """The summary as a plain-text table."""
    rows = summary_rows(results)
    cells = [[title for title, _, _ in _COLUMNS]]
    cells += [[fmt(r[key]) for _, key, fmt in _COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells)


def _markdown_table(header, rows):
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _detail_rows(results):
    return [[m.case, m.engine, m.scheme, f"{m.normwise:.3g}", f"{m.native:.3g}", ratio_text(m.ratio),
             f"{m.seconds * 1e3:.2f}"] for m in results]


_DETAIL_HEADER = ["case", "engine", "scheme", "normwise error",
                  "native error (SGEMM; DGEMM for fp64_* cases)", "error/bound", "time (ms)"]


def _summary_tables(results):
    """``[(section title, header, rows, text)]``: one summary table per scheme target present."""
    rows = summary_rows(results)
    header = [title for title, _, _ in _COLUMNS]
    return [(title, header, [[fmt(r[k]) for _, k, fmt in _COLUMNS] for r in rows
                             if r["target"] == target], text)
            for target, title, text in SECTIONS if any(r["target"] == target for r in rows)]


def write(results, out, *, plots=True, note="", sections=()):
    """Write ``report.md``, ``report.html`` and (with matplotlib) PNG plots into ``out``.

    ``sections`` are extra ``(title, preformatted text)`` pairs (the GPU-vs-CPU comparison).
    Returns the list of written paths.
    """
    os.makedirs(out, exist_ok=True)
    images = _plots(results, out) if plots else []
    tables = _summary_tables(results)
    bad = violations(results)
    verdict = ("All errors are within their bounds." if not bad else
               "BOUND VIOLATED: " + "; ".join(f"{m.case} / {m.scheme} / {m.engine} "
                                              f"(ratio {m.ratio:.3g})" for m in bad))
    md = ["# splitprec accuracy report\n", note + "\n" if note else "", verdict + "\n",
          "".join(f"\n## Summary: {title}\n\n" + _markdown_table(header, rows)
                  + (f"\n{text}\n" if text else "") for title, header, rows, text in tables),
          "".join(f"\n![{name}]({name})\n" for name in images),
          "".join(f"\n## {title}\n\n```\n{text}\n```\n" for title, text in sections),
          "\n## Every measurement\n\n", _markdown_table(_DETAIL_HEADER, _detail_rows(results))]
    paths = [os.path.join(out, "report.md"), os.path.join(out, "report.html")]
    with open(paths[0], "w") as f:
        f.write("".join(md))
    with open(paths[1], "w") as f:
        f.write(_html(verdict, note, tables, images, _detail_rows(results), sections))
    return paths + [os.path.join(out, name) for name in images]


def _html_table(header, rows):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html(verdict, note, tables, images, details, sections):
    style = ("body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:48%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>splitprec accuracy report"
            f"</title><style>{style}</style></head><body><h1>splitprec accuracy report</h1>"
            f"<p>{html.escape(note)}</p><p><b>{html.escape(verdict)}</b></p>"
            + "".join(f"<h2>Summary: {html.escape(t)}</h2>{_html_table(h, r)}<p>{html.escape(x)}</p>"
                      for t, h, r, x in tables)
            + "".join(f"<img src='{html.escape(i)}' alt='{html.escape(i)}'>" for i in images)
            + "".join(f"<h2>{html.escape(t)}</h2><pre>{html.escape(x)}</pre>" for t, x in sections)
            + f"<h2>Every measurement</h2>{_html_table(_DETAIL_HEADER, details)}</body></html>")


def _plots(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from .plots import draw_all
    return draw_all(results, out, plt)


def gpu_vs_cpu(results):
    """Plain-text table: per scheme, the largest normwise GPU-CPU difference and error ratio."""
    cpu = {(m.case, m.scheme): m for m in results if m.engine == "cpu"}
    rows = {}
    for m in results:
        other = cpu.get((m.case, m.scheme)) if m.engine == "gpu" else None
        if other is None or m.output is None or other.output is None:
            continue
        with np.errstate(all="ignore"):
            diff = _normwise(m.output, np.where(np.isfinite(other.output), other.output, 0))
        ratio = m.normwise / other.normwise if other.normwise > 0 else float("nan")
        worst = rows.get(m.scheme, (0.0, 0.0))
        rows[m.scheme] = (max(worst[0], diff), max(worst[1], ratio))
    lines = ["GPU vs CPU engine: max normwise |GPU - CPU| / |CPU|, max GPU error / CPU error"]
    lines += [f"  {s:<14} {d:10.3g} {r:10.3g}" for s, (d, r) in sorted(rows.items())]
    return "\n".join(lines)
