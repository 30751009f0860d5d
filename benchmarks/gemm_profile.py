"""Where the GEMM time goes at one size: per engine the product alone; the sm90 kernel alone on
split operands; the split of A and of B (with pow2 exponents) and its GB/s; for the cuBLAS engine each
stage (split of A and of B, each small-product group, the hi*hi chunks, the pow2 unscaling); and the
public call's overhead (non-finite checks). ``--one SCHEME`` runs a single wgmma product for a
profiler (``ncu --clock-control none -k regex:gemm_split python3 benchmarks/gemm_profile.py --one bf16x6``).
Usage: ``PYTHONPATH=. python3 benchmarks/gemm_profile.py [--n 8192]``.
"""
import argparse

import cupy
import numpy as np

import splitprec as sp
from splitprec import _gpu
from benchmarks.gemm import time_ms


def cublas_stages(a, b, d, reps):
    """Milliseconds of each stage of the cuBLAS engine on (1, n, n) operands."""
    pad = _gpu.padded_k(a.shape[-1], d)
    pa = _gpu.split_stacked(a, d, transpose=False, pad=pad)
    pb = _gpu.split_stacked(b, d, transpose=True, pad=pad)
    c = cupy.empty((1, a.shape[1], b.shape[1]), np.float32)
    kp = pad
    handle = cupy.cuda.device.get_cublas_handle()
    stages = {"split A": lambda: _gpu.split_stacked(a, d, transpose=False, pad=pad),
              "split B": lambda: _gpu.split_stacked(b, d, transpose=True, pad=pad)}
    for s, first, count in _gpu._diagonals(d):
        stages[f"i+j={s} (k={count * kp})"] = lambda s=s, first=first, count=count: _gpu._cublas_gemm(
            handle, c, pa, pb, d, a_col=first * kp, b_col=(d.terms - 1 - s + first) * kp, k=count * kp, alpha=1.0, beta=1.0)
    chunk = _gpu.cublas_chunk(d, a.shape[-1])

    def hi():
        for k0 in range(0, kp, chunk):
            _gpu._cublas_gemm(handle, c, pa, pb, d, a_col=k0, b_col=(d.terms - 1) * kp + k0, k=min(chunk, kp - k0),
                              alpha=1.0, beta=1.0)
    stages[f"hi*hi ({-(-kp // chunk)} x k={chunk})"] = hi
    if pa.exponent is not None:
        stages["unscale"] = lambda: _gpu._unscale(c, pa, pb)
    return {name: time_ms(fn, reps) for name, fn in stages.items()}


def split_rates(a, b, d, reps):
    """Milliseconds and GB/s (bytes read and written, the pow2 exponent pass's read included) of the
    split of A and of B on (1, n, n) operands, as the kernel engines lay them out."""
    pad = _gpu.padded_k(a.shape[-1], d)
    rates = {}
    for name, x, transpose in (("A", a, False), ("B", b, True)):
        op = _gpu.split_operand(x, d, transpose=transpose, pad=pad)
        moved = x.nbytes * (1 if op.exponent is None else 2) + op.parts.nbytes
        ms = time_ms(lambda: _gpu.split_operand(x, d, transpose=transpose, pad=pad), reps)
        rates[name] = (ms, moved / ms / 1e6)
    return rates


def sm90_kernel_ms(a, b, d, reps):
    """Milliseconds of ``gemm_split_sm90`` alone on (1, n, n) operands split beforehand."""
    pad = _gpu.padded_k(a.shape[-1], d)
    pa = _gpu.split_operand(a, d, transpose=False, pad=pad)
    pb = _gpu.split_operand(b, d, transpose=True, pad=pad)
    c = cupy.empty((1, a.shape[1], b.shape[2]), np.float32)
    return time_ms(lambda: _gpu._gemm_sm90(pa, pb, c, d, _gpu.cublas_chunk(d, a.shape[-1])), reps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--one", metavar="SCHEME", help="run one sm90 product of SCHEME and stop")
    args = parser.parse_args()
    a, b = (cupy.random.standard_normal((args.n, args.n), dtype=np.float32) for _ in range(2))
    if args.one:
        _gpu.matmul(a, b, sp.dtype(args.one), engine="sm90")
        cupy.cuda.Device().synchronize()
        return
    flops = 2.0 * args.n ** 3
    print(f"checks: any_nan(a) {time_ms(lambda: _gpu.any_nan(a), args.reps):.3f} ms, "
          f"pow2 exponents of A {time_ms(lambda: _gpu._pow2_exponents(a[None], sp.dtype('fp16x3').format, -1), args.reps):.3f}"
          f" / of B {time_ms(lambda: _gpu._pow2_exponents(b[None], sp.dtype('fp16x3').format, -2), args.reps):.3f} ms")
    print(f"n={args.n}: TFLOP/s (2n^3/t) per engine; cuBLAS engine stages (ms); public - engine (ms)")
    for name in sp.dtypes("float32"):
        d = sp.dtype(name)
        times = {e: time_ms(lambda e=e: _gpu.matmul(a, b, d, engine=e), args.reps) for e in ("sm90", "cublas")}
        kernel = sm90_kernel_ms(a[None], b[None], d, args.reps)
        public = time_ms(lambda: sp.matmul(a, b, dtype=d), args.reps)
        stages = cublas_stages(a[None], b[None], d, args.reps)
        splits = split_rates(a[None], b[None], d, args.reps)
        print(f"{name:7s} " + "  ".join(f"{e} {flops / t / 1e9:6.1f}" for e, t in times.items())
              + f"  public - engine(auto) {public - times[_gpu.auto_engine(d, args.n, args.n, args.n, 1)]:5.2f} ms"
              + f"\n        sm90 kernel alone {kernel:.3f} ms: {flops * len(d.products) / kernel / 1e9:.1f} narrow TFLOP/s"
              + "\n        split " + ", ".join(f"{x} {ms:.3f} ms ({gbs:.0f} GB/s)" for x, (ms, gbs) in splits.items())
              + "\n        " + ", ".join(f"{s} {t:.3f}" for s, t in stages.items()), flush=True)


if __name__ == "__main__":
    main()
