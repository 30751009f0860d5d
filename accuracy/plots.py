"""PNG plots of a report: error vs k, vs exponent span and vs N, each scheme's worst case, bound tightness.

Every marker sits at the x where its case was measured. Schemes with identical results stay apart by
marker shape and size (hollow markers, the first scheme's largest, so that coinciding ones nest),
never by moving them. The y axis has a floor, ``FLOOR_FRACTION`` of the target's unit roundoff
(float32: 9.3e-10, float64: 1.7e-18): errors at or below it, exact ones included, are drawn on the
dotted floor line, so an exact result reads as "no error above the floor" and not as a made-up
value; errors above ``CEILING`` (no correct digit) are drawn on its line. The fp64 schemes
(float64 cases ``fp64_*``) have their own error-vs-k and error-vs-span plots against DGEMM; the
tightness plot has one panel for the float32-target and one for the fp64 schemes; the worst-case
plot marks, per scheme and op, the case where its error over native's and its error over its bound
are largest, named beside the marker. Legends sit to the right of the axes. matplotlib, Agg.
"""
import math
import os
import statistics

MARKERS = "ovs^D<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
FLOOR_FRACTION = 1 / 64    # the y floor: far below any error a scheme of either class makes on real data
CEILING = 10.0             # a normwise relative error above 1 carries no correct digit


def floor_of(target):
    """The y floor of the error plots of schemes of ``target``."""
    return UNIT_ROUNDOFF[target] * FLOOR_FRACTION


def _series(results, prefix, param, fixed, op, engine="cpu"):
    """``{scheme: [(param, normwise)]}`` and the native line, for cases named ``prefix*`` whose
    parameters hold ``fixed`` (e.g. ``{"k": 256}``)."""
    lines, native = {}, {}
    for m in results:
        if (m.engine == engine and m.op == op and m.case.startswith(prefix) and param in m.params
                and all(m.params.get(key) == value for key, value in fixed.items())):
            lines.setdefault(m.scheme, []).append((m.params[param], m.normwise))
            native[m.params[param]] = m.native
    return {s: sorted(v) for s, v in lines.items()}, sorted(native.items())


def _clipped(ys, floor):
    return [min(max(y, floor), CEILING) for y in ys]


def _marker_size(i, count):
    """Hollow markers from 12 points (first scheme) down to 4 (last): coinciding ones nest."""
    return 4 + 8 * (count - 1 - i) / max(count - 1, 1)


def _line_plot(plt, lines, native, xlabel, title, path, logx, native_label, floor):
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    draw_lines(ax, lines, native, logx, native_label, floor)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw_lines(ax, lines, native, logx, native_label, floor):
    """``lines`` (``{scheme: [(x, error)]}``) and the native line on ``ax`` at their measured x,
    errors clipped to ``[floor, CEILING]`` and those lines drawn, ticks at the measured x, legend outside."""
    every_y = []
    for i, (scheme, points) in enumerate(sorted(lines.items())):
        xs, ys = zip(*points)
        every_y += ys
        ax.plot(xs, _clipped(ys, floor), marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                markersize=_marker_size(i, len(lines)), fillstyle="none", markeredgewidth=1.2, label=scheme)
    if native:
        xs, ys = zip(*native)
        every_y += ys
        ax.plot(xs, _clipped(ys, floor), marker="*", linestyle="-", color="k", lw=1.5, markersize=7,
                label=native_label)
    ax.axhline(floor, color="0.4", lw=0.8, ls=":", label=f"floor {floor:.2g}: errors at or below it (0: exact)")
    top = min(max(every_y + [floor]), CEILING)
    if max(every_y + [0.0]) > CEILING:
        ax.axhline(CEILING, color="0.4", lw=0.8, ls="--", label=f"errors above {CEILING:g} drawn at {CEILING:g}")
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, top * 4)
    measured = sorted({x for points in lines.values() for x, _ in points} | {x for x, _ in native})
    ax.set_xticks(measured, [f"{x:g}" for x in measured])
    ax.minorticks_off()
    ax.set_ylabel("normwise relative error")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _ratios(results, target):
    """``{scheme: (rigorous ratios, probabilistic ratios, cases)}``: the ratios of the CPU engine's
    cases with a nonzero error (a log axis cannot show 0) and the number of cases run."""
    by_scheme = {}
    for m in results:
        if m.engine == "cpu" and m.target == target:
            rigorous, likely, count = by_scheme.get(m.scheme, ([], [], 0))
            if m.ratio > 0:
                rigorous.append(m.ratio)
                likely.append(m.ratio_probabilistic)
            by_scheme[m.scheme] = (rigorous, likely, count + 1)
    return {s: v for s, v in by_scheme.items() if v[0]}


def _tightness_panel(ax, by_scheme, title):
    """Bars per scheme; the medians are over the cases with an error, so each scheme with exact
    cases is annotated "k/n exact", lest a median over the rest read as the median of all."""
    names = sorted(by_scheme)
    xs = range(len(names))
    bars = (("worst, rigorous", lambda r, p: max(r)), ("median, rigorous", lambda r, p: statistics.median(r)),
            ("worst, probabilistic", lambda r, p: max(p)), ("median, probabilistic", lambda r, p: statistics.median(p)))
    for i, (label, value) in enumerate(bars):
        ax.bar([x + (i - 1.5) * 0.2 for x in xs], [value(*by_scheme[n][:2]) for n in names], width=0.2, label=label)
    for x, name in zip(xs, names):
        rigorous, _, count = by_scheme[name]
        if len(rigorous) < count:
            ax.annotate(f"{count - len(rigorous)}/{count}\nexact", (x, max(rigorous)), xytext=(0, 3),
                        textcoords="offset points", ha="center", fontsize=6)
    ax.axhline(1.0, color="r", lw=1, label="bound")
    ax.set_xticks(list(xs), names, rotation=40, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(top=4 * max([1.0] + [max(v[0] + v[1]) for v in by_scheme.values()]))   # room for the notes
    ax.set_ylabel("error / bound (per entry, max over the case;\nmedians over the cases with an error)", fontsize=8)
    ax.set_title(title, fontsize=10)


def tightness_figure(plt, results):
    """The tightness figure, one panel per target present (None if no nonzero errors)."""
    panels = [(title, _ratios(results, target)) for target, title in
              (("float32", "float32-target schemes"), ("float64", "fp64 schemes (ozaki2_int8xN, adaptive)"))]
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.0 * len(panels) + 2.0, 4.4), squeeze=False)
    for ax, (title, by_scheme) in zip(axes[0], panels):
        _tightness_panel(ax, by_scheme, title)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.suptitle("Bound tightness (CPU engine, all cases)")
    return fig


# (summary-row key of the value, of its case, x label) of the two panels of the worst-case figure
WORST_PANELS = (("worst_vs_native", "worst_vs_native_case", "worst normwise error / native's (native: SGEMM, "
                 "DGEMM or a float32 FFT)"),
                ("worst_ratio", "worst_case", "worst per-entry error / rigorous bound"))


def _worst_panel(ax, rows, key, case_key, xlabel):
    """One marker per row at its worst value, named by its case (red above 1: worse than native, or
    beyond the bound); inf (native exact) right of every finite value, 0 (exact on every case) left
    of them, both said in the case text."""
    finite = [r[key] for r in rows if 0 < r[key] < math.inf]
    low, high = (min(finite) / 4, max(finite) * 4) if finite else (0.1, 10.0)
    for y, r in enumerate(rows):
        value = r[key]
        if math.isnan(value):
            continue
        x = high if value == math.inf else low if value == 0 else value
        note = " (native exact)" if value == math.inf else " (exact)" if value == 0 else ""
        ax.plot([x], [y], marker="o", color="C3" if value > 1 else "C0", clip_on=False)
        ax.annotate(f"{r[case_key]}{note}", (x, y), xytext=(4, -3), textcoords="offset points", fontsize=6.5)
    ax.axvline(1.0, color="r" if key == "worst_ratio" else "k", lw=1)
    ax.set_xscale("log")
    low, high = min(low, 0.25), max(high, 4.0)
    ax.set_xlim(low, high * (high / low) ** 0.6)      # room for the case names right of the markers
    ax.set_xlabel(xlabel, fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)


def worst_case_figure(plt, rows):
    """Per (op, scheme) of the CPU engine's summary ``rows`` (:func:`accuracy.report.summary_rows`),
    its worst case against native and against its bound, named; None without rows."""
    rows = [r for r in rows if r["engine"] == "cpu"]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: (r["target"], r["op"], r["scheme"]), reverse=True)
    fig, axes = plt.subplots(1, 2, figsize=(13.0, 1.2 + 0.2 * len(rows)), sharey=True)
    for ax, (key, case_key, xlabel) in zip(axes, WORST_PANELS):
        _worst_panel(ax, rows, key, case_key, xlabel)
    axes[0].set_yticks(range(len(rows)), [f"{r['scheme']} ({r['op']})" for r in rows], fontsize=7)
    axes[0].set_ylim(-0.7, len(rows) - 0.3)
    fig.suptitle("Each scheme's worst case (CPU engine), named beside its marker")
    return fig


def _save(plt, fig, path):
    if fig is None:
        return False
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


_SPAN = "phi (exponent span: exp(phi * N(0,1)))"
_DGEMM = "DGEMM (numpy float64)"
_FFT32 = "float32 FFT (scipy.fft)"
# (case prefix, x parameter, fixed parameters, op, target, x label, title, file, log x, native line's label)
LINE_PLOTS = (
    ("normal_k", "k", {}, "gemm", "float32", "k (inner dimension)", "GEMM error vs k, N(0,1) inputs",
     "error_vs_k.png", True, "native fp32"),
    ("span_phi", "phi", {"k": 256}, "gemm", "float32", _SPAN, "GEMM error vs exponent span, k = 256",
     "error_vs_span.png", True, "native fp32"),
    ("fp64_normal_k", "k", {}, "gemm", "float64", "k (inner dimension)",
     "fp64 schemes: GEMM error vs k, float64 N(0,1) inputs", "fp64_error_vs_k.png", True, _DGEMM),
    ("fp64_span_phi", "phi", {"k": 256}, "gemm", "float64", _SPAN,
     "fp64 schemes: GEMM error vs exponent span, k = 256", "fp64_error_vs_span.png", True, _DGEMM),
    ("fft_normal_n", "n", {}, "fft", "float32", "N", "FFT error vs N, complex N(0,1) signals",
     "fft_error_vs_n.png", True, _FFT32),
)


def draw_all(results, out, plt, rows=()):
    """Draw every plot the results (and their summary ``rows``) support into ``out``; returns the
    file names written."""
    written = []
    for prefix, param, fixed, op, target, xlabel, title, name, logx, native_label in LINE_PLOTS:
        lines, native = _series(results, prefix, param, fixed, op)
        if lines:
            _line_plot(plt, lines, native, xlabel, title, os.path.join(out, name), logx, native_label,
                       floor_of(target))
            written.append(name)
    for name, fig in (("worst_cases.png", worst_case_figure(plt, rows)),
                      ("bound_tightness.png", tightness_figure(plt, results))):
        if _save(plt, fig, os.path.join(out, name)):
            written.append(name)
    return written
