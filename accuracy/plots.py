"""PNG plots of a report: error vs k, error vs exponent span, bound tightness (matplotlib, Agg)."""
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


def _line_plot(plt, lines, native, xlabel, title, path, logx):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (scheme, points) in enumerate(sorted(lines.items())):
        xs, ys = zip(*points)
        ax.plot(xs, [max(y, 1e-18) for y in ys], marker="ov^<>sdp"[i % 8],
                linestyle=("-", "--", ":", "-.")[i % 4], label=scheme)
    if native:
        xs, ys = zip(*native)
        ax.plot(xs, [max(y, 1e-18) for y in ys], color="k", lw=2, marker="*", label="native fp32")
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
    ax.set_xticks(list(xs), names, rotation=30)
    ax.set_yscale("log")
    ax.set_ylabel("error / bound (per entry, max over the case)")
    ax.set_title("Bound tightness (CPU engine, all cases)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def draw_all(results, out, plt):
    """Draw every plot the results support into ``out``; returns the file names written."""
    written = []
    lines, native = _series(results, "normal_k", "k")
    if lines:
        _line_plot(plt, lines, native, "k (inner dimension)", "GEMM error vs k, N(0,1) inputs",
                   os.path.join(out, "error_vs_k.png"), logx=True)
        written.append("error_vs_k.png")
    lines, native = _series(results, "span_phi", "phi")
    if lines:
        _line_plot(plt, lines, native, "phi (exponent span: exp(phi * N(0,1)))",
                   "GEMM error vs exponent span, k = 256", os.path.join(out, "error_vs_span.png"),
                   logx=False)
        written.append("error_vs_span.png")
    lines, native = _series(results, "fft_normal_n", "n", op="fft")
    if lines:
        _line_plot(plt, lines, native, "N", "FFT error vs N, complex N(0,1) signals",
                   os.path.join(out, "fft_error_vs_n.png"), logx=True)
        written.append("fft_error_vs_n.png")
    if _tightness(plt, results, os.path.join(out, "bound_tightness.png")):
        written.append("bound_tightness.png")
    return written
