"""PNG plots of a report: error vs k, error vs exponent span, bound tightness (matplotlib, Agg).

The fp64 schemes (``ozaki2_int8x<N>``, float64 cases ``fp64_*``) get their own error-vs-k and
error-vs-span plots against numpy's float64 matmul (DGEMM); the tightness plot has one panel for
the float32-target and one for the fp64 schemes. So that schemes with identical results stay
apart, each line has its own marker and line style and is shifted sideways a little; legends sit
to the right of the axes; a zero (exact) error is drawn as a hollow marker on the bottom edge,
labelled "error 0 (exact)", not at an arbitrary floor.
"""
import os
import statistics

MARKERS = "ovs^D<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")
SHIFT = 0.06           # sideways offset between schemes: a fraction of a doubling (log x) or of x's range


def _series(results, prefix, param, engine="cpu", op="gemm"):
    """``{scheme: [(param, normwise)]}`` and the native line, for cases named ``prefix*``."""
    lines, native = {}, {}
    for m in results:
        if m.engine == engine and m.op == op and m.case.startswith(prefix) and param in m.params:
            lines.setdefault(m.scheme, []).append((m.params[param], m.normwise))
            native[m.params[param]] = m.native
    return {s: sorted(v) for s, v in lines.items()}, sorted(native.items())


def _shifted(xs, i, count, logx, span):
    offset = (i - (count - 1) / 2) * SHIFT
    return [x * 2 ** offset if logx else x + offset * span for x in xs]


def _draw(ax, xs, ys, style, label, exact_marked):
    """Nonzero points as a line; zero points as hollow markers on the bottom edge."""
    line, = ax.plot([x for x, y in zip(xs, ys) if y > 0], [y for y in ys if y > 0], **style, label=label)
    zeros = [x for x, y in zip(xs, ys) if y == 0]
    if zeros:
        ax.scatter(zeros, [0.02] * len(zeros), marker=style["marker"], facecolors="none",
                   edgecolors=line.get_color(), transform=ax.get_xaxis_transform(), clip_on=False,
                   label=None if exact_marked else "error 0 (exact)", zorder=3)
    return bool(zeros)


def _line_plot(plt, lines, native, xlabel, title, path, logx, native_label="native fp32"):
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    draw_lines(ax, lines, native, logx, native_label)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw_lines(ax, lines, native, logx, native_label):
    """``lines`` (``{scheme: [(x, error)]}``) and the native line on ``ax``, legend outside."""
    every_x = [x for points in lines.values() for x, _ in points]
    span = (max(every_x) - min(every_x)) or 1.0
    exact_marked = False
    for i, (scheme, points) in enumerate(sorted(lines.items())):
        xs, ys = zip(*points)
        style = {"marker": MARKERS[i % len(MARKERS)], "linestyle": LINESTYLES[i % len(LINESTYLES)],
                 "markersize": 5, "fillstyle": "none" if i % 2 else "full"}
        exact_marked |= _draw(ax, _shifted(xs, i, len(lines), logx, span), ys, style, scheme, exact_marked)
    if native:
        xs, ys = zip(*native)
        _draw(ax, xs, ys, {"marker": "*", "linestyle": "-", "color": "k", "lw": 2}, native_label, exact_marked)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("normwise relative error")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _ratios(results, target):
    """``{scheme: (rigorous ratios, probabilistic ratios)}`` of the CPU engine's nonzero errors."""
    by_scheme = {}
    for m in results:
        if m.engine == "cpu" and m.target == target and m.ratio > 0:
            rigorous, likely = by_scheme.setdefault(m.scheme, ([], []))
            rigorous.append(m.ratio)
            likely.append(m.ratio_probabilistic)
    return by_scheme


def _tightness_panel(ax, by_scheme, title):
    names = sorted(by_scheme)
    xs = range(len(names))
    bars = (("worst, rigorous", lambda r, p: max(r)), ("median, rigorous", lambda r, p: statistics.median(r)),
            ("worst, probabilistic", lambda r, p: max(p)), ("median, probabilistic", lambda r, p: statistics.median(p)))
    for i, (label, value) in enumerate(bars):
        ax.bar([x + (i - 1.5) * 0.2 for x in xs], [value(*by_scheme[n]) for n in names], width=0.2, label=label)
    ax.axhline(1.0, color="r", lw=1, label="bound")
    ax.set_xticks(list(xs), names, rotation=40, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("error / bound (per entry, max over the case)")
    ax.set_title(title, fontsize=10)


def tightness_figure(plt, results):
    """The tightness figure, one panel per target present (None if no nonzero errors)."""
    panels = [(title, _ratios(results, target)) for target, title in
              (("float32", "float32-target schemes"), ("float64", "fp64 schemes (ozaki2_int8xN)"))]
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.0 * len(panels) + 2.0, 4.4), squeeze=False)
    for ax, (title, by_scheme) in zip(axes[0], panels):
        _tightness_panel(ax, by_scheme, title)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.suptitle("Bound tightness (CPU engine, all cases)")
    return fig


def _tightness(plt, results, path):
    fig = tightness_figure(plt, results)
    if fig is None:
        return False
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


_SPAN = "phi (exponent span: exp(phi * N(0,1)))"
_DGEMM = "DGEMM (numpy float64)"
_FFT32 = "float32 FFT (scipy.fft)"
# (case prefix, parameter, op, x label, title, file, log x, native line's label)
LINE_PLOTS = (
    ("normal_k", "k", "gemm", "k (inner dimension)", "GEMM error vs k, N(0,1) inputs",
     "error_vs_k.png", True, "native fp32"),
    ("span_phi", "phi", "gemm", _SPAN, "GEMM error vs exponent span, k = 256",
     "error_vs_span.png", False, "native fp32"),
    ("fp64_normal_k", "k", "gemm", "k (inner dimension)",
     "fp64 schemes: GEMM error vs k, float64 N(0,1) inputs", "fp64_error_vs_k.png", True, _DGEMM),
    ("fp64_span_phi", "phi", "gemm", _SPAN, "fp64 schemes: GEMM error vs exponent span, k = 256",
     "fp64_error_vs_span.png", False, _DGEMM),
    ("fft_normal_n", "n", "fft", "N", "FFT error vs N, complex N(0,1) signals",
     "fft_error_vs_n.png", True, _FFT32),
)


def draw_all(results, out, plt):
    """Draw every plot the results support into ``out``; returns the file names written."""
    written = []
    for prefix, param, op, xlabel, title, name, logx, native_label in LINE_PLOTS:
        lines, native = _series(results, prefix, param, op=op)
        if lines:
            _line_plot(plt, lines, native, xlabel, title, os.path.join(out, name), logx, native_label)
            written.append(name)
    if _tightness(plt, results, os.path.join(out, "bound_tightness.png")):
        written.append("bound_tightness.png")
    return written
