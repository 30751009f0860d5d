"""CPU engine against numpy: time and peak memory of each row, splitprec's numpy-input engine beside numpy.

Rows: matmul at 512^3, 2048^3 and 4096^3 (the default ``precision="fp32"`` scheme, tf32x3 on the CPU, and every
multi-part float32 scheme), FFTs of one complex64 line of length 2^16 to 2^22, 1 x k x 1
bf16x9 vector products (k = 2^18, 2^20) and the 2048^3 ``precision="fp64"`` (adaptive Ozaki-II) product, each beside
numpy's own call on the same inputs (float32 matmul, ``numpy.fft.fft`` on complex64, float64 matmul).
Each result is checked first against ``accuracy`` (asserted: the matmuls within
``accuracy.bounds.gemm_bound`` of the float64 product at 512^3, the FFTs within
``accuracy.fft_bound`` of the float64 transform). Time: the medians of splitprec's and numpy's
calls, made in turn, over the rounds that fit in ``--seconds`` (at least ``--min-reps``) after one
warm-up call each. Memory: the bytes numpy holds at the
row's peak (``tracemalloc``, which numpy reports its buffers to), inputs included, in one more call.
Products also carry their floor (``row``): the scheme's BLAS products alone, timed in the same rounds,
and beside it the split of both operands alone, the engine's other necessary step.
Before the rows, ``--pretouch-gb`` GB of memory are written once (``pretouch``): on a virtual
machine whose host backs the guest's memory on its first touch, a page never touched before costs
far more than a page fault (the JSON's ``memory`` records both rates, measured at the start), and
which fresh pages a call gets is up to the kernel, so without it the large rows time the host.
Writes ``benchmarks/results/cpu-engine-<date>-<sha>.json`` with the machine's description.
Usage: ``python benchmarks/cpu_engine.py [--quick] [--pretouch-gb GB] [--out DIR]``.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import time
import tracemalloc

import numpy as np

import splitprec as sp
from splitprec.accuracy import fft_bound
from splitprec.accuracy.bounds import gemm_bound
from splitprec.dtypes import cheapest
from splitprec.engines.reference.gemm import narrow_matmul
from splitprec.engines.reference.tuning import class_scheme
from splitprec.split import split

MATMUL_SIZES = (512, 2048, 4096)
MATMUL_SCHEMES = ("fp32", "tf32x3", "bf16x3", "bf16x6", "bf16x9", "fp16x3")
FFT_LOG2 = (16, 18, 20, 22)
VECTOR_KS = (2 ** 18, 2 ** 20)   # two lengths: the split's cost should grow linearly in k
FP64_SIZE = 2048
MATMUL_FP32 = class_scheme("fp32")   # what precision="fp32" (the default) runs for products on the CPU
FFT_FP32 = cheapest("fp32")          # the ffts' default
QUICK = {"matmul": (512, 2048), "fft": (16, 20), "schemes": ("fp32", "bf16x9")}


def seconds_per_call(calls, seconds, min_reps):
    """Median wall times of ``calls``, called in turn (so that a busy machine slows them alike) over
    the rounds that fit in ``seconds`` (at least ``min_reps``), after one warm-up each."""
    for call in calls:
        call()
    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < seconds:
        laps = []
        for call in calls:
            t0 = time.perf_counter()
            call()
            laps.append(time.perf_counter() - t0)
        times.append(laps)
    return tuple(float(t) for t in np.median(times, axis=0))


def peak_bytes(fn, inputs):
    """Bytes held at the peak of one call of ``fn``: the inputs' plus the most the call adds."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak + sum(x.nbytes for x in inputs)


def row(op, name, size, ours, theirs, inputs, args, floor=None):
    """One result row: time and peak memory of ``ours`` (splitprec) and ``theirs`` (numpy). For a
    multi-part product, ``floor``: ``(products, split, parts)``, its narrow float32 BLAS products
    alone on parts split beforehand, the split of both operands alone (both timed in the same
    rounds) and the parts: the engine's floor, one BLAS call per product over all of k on whole
    float32 parts (``floor_seconds``; ``floor_peak_mb``, the inputs and the parts; ``of_floor`` and
    ``of_floor_memory``, the floor over the row's own), ``split_seconds`` and ``of_floor_and_split``
    (the two steps' time over the row's)."""
    calls = (ours, theirs) if floor is None else (ours, theirs) + floor[:2]
    times = seconds_per_call(calls, args.seconds, args.min_reps)
    result = {"op": op, "name": name, "size": size, "seconds": times[0], "numpy_seconds": times[1],
              "x_numpy": times[0] / times[1], "peak_mb": peak_bytes(ours, inputs) / 2 ** 20,
              "numpy_peak_mb": peak_bytes(theirs, inputs) / 2 ** 20}
    result["x_numpy_memory"] = result["peak_mb"] / result["numpy_peak_mb"]
    line = (f"{op:7s} {name:20s} {size:>14s}  {times[0]:9.4f} s  {result['x_numpy']:6.1f}x numpy  "
            f"{result['peak_mb']:8.1f} MB ({result['x_numpy_memory']:.1f}x numpy's)")
    if floor is not None:
        parts_mb = sum(t.nbytes for parts in floor[2] for t in parts.terms) / 2 ** 20
        result.update(floor_seconds=times[2], of_floor=times[2] / times[0], split_seconds=times[3],
                      of_floor_and_split=(times[2] + times[3]) / times[0],
                      floor_peak_mb=parts_mb + sum(x.nbytes for x in inputs) / 2 ** 20)
        result["of_floor_memory"] = result["floor_peak_mb"] / result["peak_mb"]
        line += (f"  floor {result['of_floor']:.2f} of the time (with the split "
                 f"{result['of_floor_and_split']:.2f}), {result['of_floor_memory']:.2f} of the memory")
    print(line, flush=True)
    return result


def products_floor(a, b, name):
    """``row``'s ``floor`` of scheme ``name`` on float32 ``a @ b``: its narrow products on parts split
    beforehand, and the split of both operands."""
    d = sp.dtype(name)
    parts = (split(a, d, axis=-1), split(b, d, axis=-2))
    return (lambda: narrow_matmul(*parts, d), lambda: (split(a, d, axis=-1), split(b, d, axis=-2)), parts)


def check_accuracy(rng):
    """Every matmul scheme within its bound at 512^3 and every FFT length within its bound (asserted)."""
    a, b = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    for name in MATMUL_SCHEMES:
        d = MATMUL_FP32 if name == "fp32" else name
        ratio = float((np.abs(sp.matmul(a, b, dtype=d) - exact) / gemm_bound(a, b, d)).max())
        assert ratio <= 1, f"matmul {name} exceeds its bound: max error/bound = {ratio!r}"
    for log2n in FFT_LOG2:
        x = rng.standard_normal(2 ** (log2n + 1)).astype(np.float32).view(np.complex64)
        exact = np.fft.fft(x.astype(np.complex128))
        error = np.linalg.norm(sp.fft.fft(x) - exact) / np.linalg.norm(exact)
        bound = fft_bound(x, FFT_FP32)
        assert error <= bound, f"fft 2^{log2n} exceeds its bound: {error!r} > {bound!r}"


def matmul_rows(rng, sizes, schemes, args):
    rows = []
    for n in sizes:
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        for name in schemes:
            kwargs = {"precision": "fp32"} if name == "fp32" else {"dtype": name}
            floor = products_floor(a, b, MATMUL_FP32 if name == "fp32" else name)
            rows.append(row("matmul", name, f"{n}^3", lambda: sp.matmul(a, b, **kwargs),
                            lambda: np.matmul(a, b), (a, b), args, floor))
    return rows


def fft_rows(rng, log2ns, args):
    rows = []
    for log2n in log2ns:
        x = rng.standard_normal(2 ** (log2n + 1)).astype(np.float32).view(np.complex64)
        rows.append(row("fft", "fp32", f"2^{log2n}", lambda: sp.fft.fft(x), lambda: np.fft.fft(x), (x,), args))
    return rows


def vector_rows(rng, args):
    rows = []
    for k in VECTOR_KS:
        a = rng.standard_normal((1, k)).astype(np.float32)
        b = rng.standard_normal((k, 1)).astype(np.float32)
        rows.append(row("matmul", "bf16x9", f"1x{k}x1", lambda: sp.matmul(a, b, dtype="bf16x9"),
                        lambda: np.matmul(a, b), (a, b), args, products_floor(a, b, "bf16x9")))
    return rows


def fp64_row(rng, args):
    a, b = (rng.standard_normal((FP64_SIZE, FP64_SIZE)) for _ in range(2))
    return row("matmul", "fp64", f"{FP64_SIZE}^3", lambda: sp.matmul(a, b, precision="fp64"),
               lambda: np.matmul(a, b), (a, b), args)


def pretouch(gigabytes):
    """Write ``gigabytes`` GB once, 256 MB at a time, and free them (module docstring); the ms per
    GB of the first write of a fresh 256 MB block and of a second write into it, before that."""
    block = 1 << 28
    first = np.empty(block, np.uint8)
    t0 = time.perf_counter()
    first.fill(1)
    t1 = time.perf_counter()
    first.fill(2)
    t2 = time.perf_counter()
    del first
    touched = [np.ones(block, np.uint8) for _ in range(int(gigabytes * 2 ** 30) // block)]
    del touched
    return {"first_touch_ms_per_gb": (t1 - t0) * 4e3, "rewrite_ms_per_gb": (t2 - t1) * 4e3,
            "pretouched_gb": gigabytes}


def available_gb():
    """The memory available now, in GB (0 where the platform does not tell)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") / 2 ** 30
    except (ValueError, OSError, AttributeError):
        return 0.0


def machine():
    """The machine and the libraries the rows ran on."""
    cpu = next((line.split(":", 1)[1].strip() for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if pathlib.Path("/proc/cpuinfo").exists() \
        else platform.processor()
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    sha = os.environ.get("SPLITPREC_GIT_SHA") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
    return {"device": "cpu", "cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "numpy": np.__version__,
            "blas": f"{blas.get('name')} {blas.get('version')}", "splitprec": sp.__version__, "git_sha": sha,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512^3 and 2048^3, two schemes, two FFT lengths")
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent per timed call (after warm-up)")
    parser.add_argument("--min-reps", type=int, default=3)
    parser.add_argument("--only", choices=("matmul", "fft", "vector", "fp64"), action="append")
    parser.add_argument("--pretouch-gb", type=float, default=min(8.0, available_gb() / 2),
                        help="GB of memory written once before the rows (module docstring; 0: none; "
                             "default 8 or half the available memory)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    memory = pretouch(args.pretouch_gb)
    print(f"memory: first touch {memory['first_touch_ms_per_gb']:.0f} ms per GB, a second write "
          f"{memory['rewrite_ms_per_gb']:.0f}; {args.pretouch_gb:g} GB touched", flush=True)
    rng = np.random.default_rng(0)
    check_accuracy(rng)
    only = set(args.only or ("matmul", "fft", "vector", "fp64"))
    sizes, schemes, log2ns = (QUICK["matmul"], QUICK["schemes"], QUICK["fft"]) if args.quick else \
        (MATMUL_SIZES, MATMUL_SCHEMES, FFT_LOG2)
    results = (matmul_rows(rng, sizes, schemes, args) if "matmul" in only else []) + \
        (fft_rows(rng, log2ns, args) if "fft" in only else []) + \
        (vector_rows(rng, args) if "vector" in only else []) + ([fp64_row(rng, args)] if "fp64" in only else [])
    head = machine()
    path = pathlib.Path(args.out) / f"cpu-engine-{head['date'][:10]}-{head['git_sha']}.json"
    path.write_text(json.dumps({**head, "memory": memory, "results": results}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
