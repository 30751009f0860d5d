"""The accuracy report: run a suite of cases on every scheme and engine, summarize, write files.

``run(level, schemes, ops, sizes, engines, progress)`` measures every (case, scheme, engine): the
float32-target schemes on the float32 cases, the fp64 schemes (``ozaki2_int8x<N>``,
``ozaki2_int8_adaptive``) on the float64 GEMM cases ``fp64_*`` (native: DGEMM); ``summary(results)``
is the per-scheme table printed last by ``splitprec report`` (worst error relative to native and its
case, worst error/bound for the rigorous and the probabilistic bound), ``class_findings(results)``
says in words where a scheme is not fp32 (fp64) class, and which are so only within an exponent span
(``accuracy.classes``); ``write(results, out)`` writes ``report.md``, ``report.html``,
``report.json`` (provenance and every row) and PNG plots (matplotlib, Agg).
"""
from dataclasses import replace
import math
import os
import statistics

import numpy as np

import splitprec

from . import cases as case_registry, provenance, report_files
from .classes import class_label, class_span
from .measure import (CONFIDENCE, NATIVE, _normwise, exact_spectrum, gemm_schemes, measure_fft, measure_gemm,
                      native_error, ratio_text, single_precision_fft)
from .reference import exact_matmul


def has_fft():
    """True when this splitprec provides ``splitprec.fft.fft``."""
    return hasattr(getattr(splitprec, "fft", None), "fft")


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
        native = native_error(*inputs, exact)
        measure = lambda s, e: measure_gemm(*inputs, s, e, reference=exact, native=native)
    else:
        exact = exact_spectrum(inputs[0], case.op)
        native = {e: _normwise(single_precision_fft(inputs[0], case.op, e), exact) for e in engines}
        measure = lambda s, e: measure_fft(inputs[0], s, e, op=case.op, reference=exact, native=native[e])
    for scheme in schemes:
        for engine in engines:
            yield replace(measure(scheme, engine), case=case.name, params=dict(case.params))


def run(level="quick", schemes=None, ops=("gemm", "fft", "rfft"), sizes=None, engines=("cpu",), progress=None):
    """Measure every selected case on every scheme and engine; returns a list of Measurements.

    A case runs on the schemes of its target: float32 cases (and FFT signals) on the float32-target
    schemes, the float64 ``fp64_*`` GEMM cases on the fp64 schemes. ``schemes`` default: every
    scheme with a bound (:func:`accuracy.measure.gemm_schemes`); given, exactly those (each once)
    run. ``progress(done, total, label)`` is called after each measurement when given.
    """
    schemes = gemm_schemes() if schemes is None else list(dict.fromkeys(splitprec.dtype(s).name for s in schemes))
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
    """What the bound of ``scheme`` guarantees: ``"fp32"`` / ``"fp64"``, ``"fp64 within 2 binades"``
    (of each row's and column's largest entry), ``"< fp32 (16-bit split)"``, ``"< fp64"``
    (:func:`accuracy.classes.class_label`)."""
    return class_label(scheme)


def versus_native(m):
    """``m.normwise / m.native``; inf where native is exact and the scheme is not, None where both
    are exact (nothing to compare)."""
    if m.native > 0:
        return m.normwise / m.native
    return math.inf if m.normwise > 0 else None


def native_name(op, target):
    """What "native" is for ``op`` on schemes of ``target``."""
    if op != "gemm":
        return "the float32 FFT"
    return "SGEMM" if target == "float32" else "DGEMM"


def _worst(ms, value):
    """``(largest value(m), its case)`` over ``ms`` where ``value(m)`` is not None/NaN."""
    scored = [(value(m), m.case) for m in ms if value(m) is not None and not math.isnan(value(m))]
    return max(scored, key=lambda pair: pair[0]) if scored else (math.nan, "")


def summary_rows(results):
    """One row per (engine, op, target, scheme): class, the worst error relative to native and its
    case, the median of that on N(0,1) data, the worst error/bound (rigorous and probabilistic)."""
    groups = {}
    for m in results:
        groups.setdefault((m.engine, m.op, m.target, m.scheme), []).append(m)
    rows = []
    for (engine, op, target, scheme), ms in sorted(groups.items()):
        typical = [m for m in ms if m.case.startswith(("normal_", "fp64_normal_", "fft_normal_", "rfft_normal_"))] or ms
        versus = [v for v in map(versus_native, typical) if v is not None]
        worst_versus, versus_case = _worst(ms, versus_native)
        worst_ratio, ratio_case = _worst(ms, lambda m: m.ratio)
        rows.append({"engine": engine, "op": op, "scheme": scheme, "target": target,
                     "class": scheme_class(scheme), "worst_vs_native": worst_versus,
                     "worst_vs_native_case": versus_case,
                     "vs_native": statistics.median(versus) if versus else math.nan,
                     "median_error": statistics.median(m.normwise for m in typical),
                     "worst_ratio": worst_ratio, "worst_case": ratio_case,
                     "worst_ratio_probabilistic": _worst(ms, lambda m: m.ratio_probabilistic)[0],
                     "cases": len(ms)})
    return rows


CLASS_FACTOR = 4.0       # an fp32 (fp64) class scheme further than this from native is said to miss


def class_findings(results, factor=CLASS_FACTOR):
    """Sentences saying where schemes are not fp32 (fp64) class: per class scheme, the cases whose
    error is above ``factor`` times native's (worst first); per op, the schemes of the class only
    within an exponent span, and those below class by design, each with its worst case."""
    groups = {}
    for m in results:
        groups.setdefault((m.engine, m.op, m.target), {}).setdefault(m.scheme, []).append(m)
    lines = []
    for (engine, op, target), by_scheme in sorted(groups.items()):
        label, native = NATIVE[target], native_name(op, target)
        where = f"{op}, {engine} engine"
        held = []
        for scheme, ms in sorted(by_scheme.items()):
            if class_span(scheme) != math.inf:
                continue
            missed = sorted(((versus_native(m), m.case) for m in ms
                             if versus_native(m) is not None and versus_native(m) > factor), reverse=True)
            if not missed:
                held.append(scheme)
                continue
            listed = ", ".join(f"{case} ({_against(v, native)})" for v, case in missed[:5])
            more = f" and {len(missed) - 5} more" if len(missed) > 5 else ""
            lines.append(f"{scheme} ({where}) is NOT {label} class on {len(missed)} of {len(ms)} cases, "
                         f"error above {factor:g}x {native}'s: {listed}{more}.")
        if held:
            lines.append(f"{', '.join(held)} ({where}): within {factor:g}x {native}'s error on every case.")
        section = f"docs/bounds.md, section {CLASS_SECTION[target]}; {where}"
        largest = "each row's and column's largest entry" if op == "gemm" else "each signal's largest entry"
        for title, chosen in ((f"{label} class only within an exponent span below {largest}, by design",
                               lambda span: span not in (None, math.inf)),
                              (f"Below {label} class by design", lambda span: span is None)):
            named = [(scheme, *_worst(ms, versus_native)) for scheme, ms in sorted(by_scheme.items())
                     if chosen(class_span(scheme))]
            if named:
                lines.append(f"{title} ({section}): " + ", ".join(
                    f"{s} ({_span_words(s)}worst: {_against(v, native)}, on {case})" for s, v, case in named) + ".")
    return lines


CLASS_SECTION = {"float32": 8, "float64": 12}     # where docs/bounds.md defines the class


def _span_words(scheme):
    """``"within 2 binades; "`` for a scheme whose class holds within a span, else ``""``."""
    span = class_span(scheme)
    return f"within {span} binades; " if span not in (None, math.inf) else ""


def _against(value, native):
    """``"4.86e+04x SGEMM"``, or for inf ``"an error where SGEMM is exact"``."""
    return f"an error where {native} is exact" if value == math.inf else f"{value:.3g}x {native}"


def _versus_text(versus):
    """A ratio to native's error; NaN (every case exact, the scheme's and native's) as "both exact"."""
    return "both exact" if math.isnan(versus) else f"{versus:.3g}"


_COLUMNS = (("engine", "engine", "{}".format), ("op", "op", "{}".format),
            ("scheme", "scheme", "{}".format), ("class", "class", "{}".format),
            ("worst x native", "worst_vs_native", _versus_text),
            ("on case", "worst_vs_native_case", "{}".format),
            ("median x native (N(0,1))", "vs_native", _versus_text),
            ("median error (N(0,1))", "median_error", "{:.3g}".format),
            ("worst error/bound", "worst_ratio", ratio_text), ("on case", "worst_case", "{}".format),
            ("worst error/prob. bound", "worst_ratio_probabilistic", ratio_text),
            ("cases", "cases", "{}".format))
# (target, summary section title, text under its table)
SECTIONS = (("float32", "float32-target schemes (float32 operands; native: numpy float32 matmul, "
                        "SGEMM, and a float32 FFT: scipy.fft on the CPU, cuFFT on the GPU; "
                        "class fp32 = fp32-class bound)",
             "fp32 within s binades: the fp32-class bound for rows and columns whose entries lie "
             "within s binades of their largest (docs/bounds.md, section 8)."),
            ("float64", "fp64 schemes ozaki2_int8xN and ozaki2_int8_adaptive (float64 operands, cases "
                        "fp64_*; native: numpy float64 matmul, DGEMM; class fp64 = within DGEMM's "
                        "worst-case bound plus 16 roundings per product on every input: the adaptive "
                        "scheme of precision='fp64')",
             "The Ozaki-II bound is relative to each row's and column's 2-norm (docs/bounds.md, "
             "section 12): on wide exponent spans an entry below 2**-Q of its row's norm rounds to "
             "zero and the bound is nearly attained (ratios such as 0.99999999999992). So the fixed "
             "ozaki2_int8xN are fp64 class only within a span (class \"fp64 within s binades\": rows "
             "and columns whose nonzero entries lie within s binades of their largest); "
             "ozaki2_int8_adaptive keeps every entry within DGEMM's worst-case bound (section 15)."))
BOUNDS_NOTE = (f"x native: the scheme's normwise error over native's on the same input (inf: native "
               f"exact, the scheme not). error/bound: the rigorous bound; error/prob. bound: the "
               f"probabilistic one (confidence {CONFIDENCE}, Higham & Mary's model of independent "
               f"rounding errors, docs/bounds.md section 13), which random data should exceed on at "
               f"most a fraction {1 - CONFIDENCE:.3g} of entries and adversarial data may exceed.")


def summary(results):
    """The summary as a plain-text table."""
    rows = summary_rows(results)
    cells = [[title for title, _, _ in _COLUMNS]]
    cells += [[fmt(r[key]) for _, key, fmt in _COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells)


def _detail_rows(results):
    return [[m.case, m.engine, m.scheme, f"{m.normwise:.3g}", f"{m.native:.3g}", ratio_text(m.ratio),
             ratio_text(m.ratio_probabilistic), f"{m.seconds * 1e3:.2f}"] for m in results]


_DETAIL_HEADER = ["case", "engine", "scheme", "normwise error",
                  "native error (SGEMM; DGEMM for fp64_* cases; float32 FFT)", "error/bound",
                  "error/prob. bound", "time (ms)"]


def _summary_tables(results):
    """``[(section title, header, rows, text)]``: one summary table per scheme target present."""
    rows = summary_rows(results)
    header = [title for title, _, _ in _COLUMNS]
    return [(title, header, [[fmt(r[k]) for _, k, fmt in _COLUMNS] for r in rows
                             if r["target"] == target], text)
            for target, title, text in SECTIONS if any(r["target"] == target for r in rows)]


def verdict(results):
    """``"All errors are within their bounds."`` or the violations, one line."""
    bad = violations(results)
    return ("All errors are within their bounds." if not bad else
            "BOUND VIOLATED: " + "; ".join(f"{m.case} / {m.scheme} / {m.engine} (ratio {m.ratio:.3g})"
                                           for m in bad))


def write(results, out, *, plots=True, note="", sections=(), info=None):
    """Write ``report.md``, ``report.html``, ``report.json`` and (with matplotlib) PNG plots into ``out``.

    ``sections`` are extra ``(title, preformatted text)`` pairs (the GPU-vs-CPU comparison);
    ``info`` the provenance (default :func:`accuracy.provenance.collect`). Returns the written paths.
    """
    os.makedirs(out, exist_ok=True)
    info = provenance.collect(gpu=any(m.engine == "gpu" for m in results)) if info is None else info
    content = {"verdict": verdict(results), "note": note, "findings": class_findings(results),
               "bounds_note": BOUNDS_NOTE, "tables": _summary_tables(results),
               "detail_header": _DETAIL_HEADER, "details": _detail_rows(results),
               "sections": list(sections), "provenance": info,
               "images": _plots(results, out) if plots else []}
    paths = [os.path.join(out, name) for name in ("report.md", "report.html", "report.json")]
    for path, render in zip(paths, (report_files.markdown, report_files.html)):
        with open(path, "w") as f:
            f.write(render(content))
    with open(paths[2], "w") as f:
        report_files.write_json(f, results, summary_rows(results), content)
    return paths + [os.path.join(out, name) for name in content["images"]]


def _plots(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from .plots import draw_all
    return draw_all(results, out, plt, summary_rows(results))


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
