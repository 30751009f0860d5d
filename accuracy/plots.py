"""PNG plots of a report: error vs k, error vs exponent span, bound tightness (matplotlib, Agg).

The fp64 schemes (``ozaki2_int8x<N>``, float64 cases ``fp64_*``) get their own error-vs-k and
error-vs-span plots against numpy's float64 matmul (DGEMM); the tightness plot holds every scheme.
"""
import os
import statistics


def _series(results, prefix, param, engine="cpu", op="gemm"):
    """``{scheme: [(param, normwise)]}`` and the native float32 line, for cases named ``prefix*``."""
    lines, native = {}, {}
    for m in results:
        if m.engine == engine and m.op == op and m.case.startswith(prefix) and param in m.params:
            lines.setdefault(m.scheme, []).append((m.params[param], m.normwise))
            native[m.params[param]] = m.native
    return {s: sorted(v) for s, v in lines.items()}, sorted(native.items())


def _line_plot(plt, lines, native, xlabel, title, path, logx, native_label="native fp32"):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (scheme, points) in enumerate(sorted(lines.items())):
        xs, ys = zip(*points)
        ax.plot(xs, [max(y, 1e-18) for y in ys], marker="ov^<>sdp"[i % 8],
                linestyle=("-", "--", ":", "-.")[i % 4], label=scheme)
    if native:
        xs, ys = zip(*native)
        ax.plot(xs, [max(y, 1e-18) for y in ys], color="k", lw=2, marker="*", label=native_label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("normwise relative error")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tightness(plt, results, path):
    by_scheme = {}
    for m in results:
        if m.engine == "cpu" and m.ratio > 0:
            by_scheme.setdefault(m.scheme, []).append(m.ratio)
    if not by_scheme:
        return False
    names = sorted(by_scheme)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [max(by_scheme[n]) for n in names], width=0.4, label="worst")
    ax.bar([x + 0.2 for x in xs], [statistics.median(by_scheme[n]) for n in names], width=0.4,
           label="median")
    ax.axhline(1.0, color="r", lw=1, label="bound")
    ax.set_xticks(list(xs), names, rotation=40, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("error / bound (per entry, max over the case)")
    ax.set_title("Bound tightness (CPU engine, all cases)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


_SPAN = "phi (exponent span: exp(phi * N(0,1)))"
_DGEMM = "DGEMM (numpy float64)"
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
     "fft_error_vs_n.png", True, "native fp32"),
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
