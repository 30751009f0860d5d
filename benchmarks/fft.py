"""FFT benchmark on the GPU: splitprec.fft beside cuFFT (cupy.fft) and cupyx's fftconvolve, same run.

Batched C2C transforms (2**24 complex values per case: N = 2**8 .. 2**24, and non-powers of two),
R2C, and FFT convolutions on N(0,1) data, each timed with CUDA events after a warm-up: "seconds" is
the throughput of a stream of calls (median over ``--reps`` rounds of 8 back-to-back calls between
two events, so the host's launch work overlaps the GPU's, as in a batched workload), and
"latency_seconds" one call alone between the events (median of ``--reps``). Error: normwise
against cupy's complex128 FFT (float64 convolution) of the same input. Speed: GB/s counts one read
of the input and one write of the output. Accuracy is checked first: every
fp32-class row must be within 2x cuFFT's error (cupyx's for convolutions); a miss is reported and
the script exits 1 after writing ``benchmarks/results/fft-<date>-<sha>.json``.
Usage: ``PYTHONPATH=. python3 benchmarks/fft.py [--reps 10] [--out DIR] [--sizes N ...] [--no-passes]``; ``--table RESULTS.json``
prints the table of a saved run (no GPU needed).
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import cupy

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import splitprec as sp  # noqa: E402
from splitprec.accuracy import fft_bound  # noqa: E402
from splitprec.engines.cuda import fft as cuda_fft  # noqa: E402
from splitprec.engines import plan as fft_plan  # noqa: E402
from splitprec.dtypes import cheapest  # noqa: E402
from gemm import header, time_ms  # noqa: E402

DEFAULT = cheapest("fp32").name
SCHEMES = ["tf32x3", "fp16x3", DEFAULT]
TOTAL = 2 ** 24                       # complex values per C2C case
C2C = [2 ** e for e in range(8, 25, 2)] + [1000, 1536, 2187, 3600, 1009, 4095, 3 * 2 ** 12, 100000]
R2C = [2 ** 10, 2 ** 12, 2 ** 16, 2 ** 20, 2 ** 24]
CONV = [(64, 2 ** 16, 1025, "same", 1), (1, 2 ** 22, 4097, "full", 1),    # (batch, n, taps, mode, filters)
        (256, 2 ** 14, 129, "same", 1), (1, 2 ** 24, 65, "full", 1), (64, 2 ** 16, 1025, "same", 64)]


def check_accuracy():
    """Per-line error / ``fft_bound(engine="gpu")`` of both GPU engines; the number of lines over 1."""
    over = 0
    for n in (256, 4096, 2 ** 13, 2 ** 21, 1000, 2187, 1009, 4095):
        x = (np.random.default_rng(n).standard_normal((4, 2 * n)).astype(np.float32)).view(np.complex64)
        ref = np.fft.fft(x.astype(np.complex128))
        for name in SCHEMES:
            bound = fft_bound(x, name, engine="gpu")
            for kernel in (True, False):
                y = cuda_fft.forward(cupy.asarray(x), sp.dtype(name), kernel=kernel).get()
                ratio = np.linalg.norm(y - ref, axis=-1) / np.linalg.norm(ref, axis=-1) / bound
                over += int((ratio > 1).sum())
                print(f"accuracy n={n} {name} kernel={kernel}: max error/bound {ratio.max():.3g}", flush=True)
    return over


def rel_error(y, ref):
    return float(cupy.linalg.norm(y.astype(ref.dtype) - ref) / cupy.linalg.norm(ref))


def throughput_ms(fn, reps, calls=8):
    """Median milliseconds per call over ``reps`` rounds of ``calls`` back-to-back calls of ``fn``
    between two CUDA events (after a warm-up)."""
    fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / calls)
    return float(np.median(times))


def record(op, name, engine, n, batch, fn, reps, nbytes, err, **extra):
    """The result row of ``fn`` (one call of the case): its throughput and latency, GB/s, error."""
    ms = throughput_ms(fn, reps)
    return {"op": op, "name": name, "engine": engine, "n": n, "batch": batch, "seconds": ms * 1e-3,
            "latency_seconds": time_ms(fn, reps) * 1e-3, "gbps": nbytes / (ms * 1e-3) / 1e9,
            "rel_error": err, **extra}


def case_key(r):
    """The case of a result row: its anchor is the row of the same case with engine "cufft"."""
    return r["op"], r["n"], r.get("filters", 1)


def fused(n, d):
    """True when the GPU runs length ``n`` in scheme ``d`` by the fused kernel (one launch per step)."""
    return cuda_fft.runs_fused(fft_plan.plan(n, d, "gpu"))


def c2c_case(n, reps, passes):
    batch = max(1, TOTAL // n)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((batch, 2 * n)).astype(np.float32).view(np.complex64)
    x = cupy.asarray(x)
    ref = cupy.fft.fft(x.astype(np.complex128))
    nbytes = 2 * x.nbytes
    rows = [record("fft", "cufft", "cufft", n, batch, lambda: cupy.fft.fft(x), reps, nbytes,
                   rel_error(cupy.fft.fft(x), ref))]
    for name in SCHEMES:
        d = sp.dtype(name)
        engines = [("passes", False)]
        if fused(n, d):
            engines = [("fused", True)] + ([("passes", False)] if passes else [])
        elif fft_plan.factorize(n) is None:
            engines = [("bluestein", True)]
        for engine, kernel in engines:     # the public call where it runs the kernel
            if kernel:
                run = lambda: sp.fft.fft(x, dtype=name)   # noqa: E731
            else:
                run = lambda: cuda_fft.forward(x, d, kernel=False)   # noqa: E731
            rows.append(record("fft", name, engine, n, batch, run, reps, nbytes, rel_error(run(), ref)))
    return rows


def r2c_case(n, reps):
    batch = max(1, TOTAL // n)
    x = cupy.asarray(np.random.default_rng(n).standard_normal((batch, n)).astype(np.float32))
    ref = cupy.fft.rfft(x.astype(np.float64))
    nbytes = x.nbytes + batch * (n // 2 + 1) * 8
    rows = [record("rfft", "cufft", "cufft", n, batch, lambda: cupy.fft.rfft(x), reps, nbytes,
                   rel_error(cupy.fft.rfft(x), ref))]
    run = lambda: sp.fft.rfft(x)   # noqa: E731
    rows.append(record("rfft", DEFAULT, "public", n, batch, run, reps, nbytes, rel_error(run(), ref)))
    return rows


def conv_case(batch, n, taps, mode, filters, reps):
    """``batch`` rows of ``n`` convolved with ``filters`` rows of ``taps`` (one for all, or one per row)."""
    import cupyx.scipy.signal
    rng = np.random.default_rng(taps)
    a = cupy.asarray(rng.standard_normal((batch, n)).astype(np.float32))
    b = cupy.asarray(rng.standard_normal((filters, taps)).astype(np.float32))
    ref = cupyx.scipy.signal.fftconvolve(a.astype(np.float64), b.astype(np.float64), mode, axes=-1)
    nbytes = a.nbytes + b.nbytes + ref.size * 4
    anchor = lambda: cupyx.scipy.signal.fftconvolve(a, b, mode, axes=-1)   # noqa: E731
    ours = lambda: sp.fft.fftconvolve(a, b, mode, axes=-1)   # noqa: E731
    return [record("fftconvolve", "cupyx_fftconvolve", "cufft", n, batch, anchor, reps, nbytes,
                   rel_error(anchor(), ref), taps=taps, filters=filters),
            record("fftconvolve", DEFAULT, "public", n, batch, ours, reps, nbytes,
                   rel_error(ours(), ref), taps=taps, filters=filters)]


def misses(results):
    """fp32-class rows whose error exceeds 2x the anchor's (cuFFT / cupyx) of the same case."""
    anchor = {case_key(r): r["rel_error"] for r in results if r["engine"] == "cufft"}
    return [r for r in results if r["engine"] != "cufft" and sp.dtype(r["name"]).fp32_class
            and r["rel_error"] > 2 * anchor[case_key(r)]]


def table(results):
    """Markdown table: every row with time, GB/s, speed relative to the anchor, error."""
    anchor = {case_key(r): r["seconds"] for r in results if r["engine"] == "cufft"}
    latency = {case_key(r): r.get("latency_seconds") for r in results if r["engine"] == "cufft"}
    lines = ["| op | N x batch | name (engine) | time µs | GB/s | x cuFFT | rel. error | latency µs (x cuFFT) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        op = r["op"] + (f" ({r['taps']} taps, {r['filters']} filter(s))" if "taps" in r else "")
        lines.append(f"| {op} | {r['n']} x {r['batch']} | {r['name']} ({r['engine']}) | "
                     f"{r['seconds'] * 1e6:.0f} | {r['gbps']:.0f} | "
                     f"{anchor[case_key(r)] / r['seconds']:.2f} | {r['rel_error']:.1e} | "
                     + (f"{r['latency_seconds'] * 1e6:.0f} ({latency[case_key(r)] / r['latency_seconds']:.2f}) |"
                        if "latency_seconds" in r else "|"))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    parser.add_argument("--no-fused", action="store_true", help="never launch the fused FFT kernel")
    parser.add_argument("--table", help="print the table of this saved results file and stop")
    parser.add_argument("--sizes", type=int, nargs="+", default=C2C, help="C2C lengths (default: all)")
    parser.add_argument("--ops", default="fft,rfft,fftconvolve", help="cases to run (default: all three)")
    parser.add_argument("--no-passes", action="store_true",
                        help="time the passes engine only where no fused kernel runs")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(pathlib.Path(args.table).read_text())["results"]))
        return 0
    if args.no_fused:
        cuda_fft.kernel_supported = lambda n, d: False
    over = check_accuracy()
    head, results = header(), []
    ops = args.ops.split(",")
    for n in args.sizes if "fft" in ops else ():
        results += c2c_case(n, args.reps, not args.no_passes)
        print(f"fft n={n} done", flush=True)
    for n in R2C if "rfft" in ops else ():
        results += r2c_case(n, args.reps)
    for case in CONV if "fftconvolve" in ops else ():
        results += conv_case(*case, args.reps)
    out = pathlib.Path(args.out) / f"fft-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(f"wrote {out}")
    bad = misses(results)
    for r in bad:
        print(f"ACCURACY MISS: {r['op']} {r['name']} ({r['engine']}) n={r['n']}: {r['rel_error']:.3g}")
    print(table(results))
    return 1 if bad or over else 0


if __name__ == "__main__":
    sys.exit(main())
