"""Where the GEMM time goes at one size: per engine the product alone; the sm90 kernel alone on
split operands; the split of A and of B (with pow2 exponents) and its GB/s; for the cuBLAS engine each
stage (split of A and of B, each small-product group, the hi*hi chunks, the pow2 unscaling); and the
public call's overhead (non-finite checks). ``--one SCHEME`` runs a single wgmma product for a
profiler (``ncu --clock-control none -k regex:gemm_split python3 benchmarks/gemm_profile.py --one bf16x6``).
``--limits`` measures what limits the sm90 kernel instead (:func:`limits`), ``--ceilings`` what the
speed targets ask of the GPU at its power limit (:func:`ceilings`).
Usage: ``PYTHONPATH=. python3 benchmarks/gemm_profile.py [--n 8192] [--limits | --ceilings]``.
"""
import argparse
import dataclasses
import subprocess
import threading
import time

import cupy
import numpy as np

import splitprec as sp
from splitprec.engines.cuda import gemm as cuda_gemm, gemm_cublas, gemm_sm90, split as cuda_split
from benchmarks.gemm import cublas_gemm_ex, time_ms, to_bf16_bits


def cublas_stages(a, b, d, reps):
    """Milliseconds of each stage of the cuBLAS engine on (1, n, n) operands."""
    pad = cuda_split.padded_k(a.shape[-1], d)
    pa = cuda_split.split_stacked(a, d, transpose=False, pad=pad)
    pb = cuda_split.split_stacked(b, d, transpose=True, pad=pad)
    c = cupy.empty((1, a.shape[1], b.shape[1]), np.float32)
    kp = pad
    handle = cupy.cuda.device.get_cublas_handle()
    stages = {"split A": lambda: cuda_split.split_stacked(a, d, transpose=False, pad=pad),
              "split B": lambda: cuda_split.split_stacked(b, d, transpose=True, pad=pad)}
    for s, first, count in gemm_cublas._diagonals(d):
        stages[f"i+j={s} (k={count * kp})"] = lambda s=s, first=first, count=count: gemm_cublas._cublas_gemm(
            handle, c, pa, pb, d, a_col=first * kp, b_col=(d.terms - 1 - s + first) * kp, k=count * kp, alpha=1.0, beta=1.0)
    chunk = gemm_cublas.cublas_chunk(d, a.shape[-1])

    def hi():
        for k0 in range(0, kp, chunk):
            gemm_cublas._cublas_gemm(handle, c, pa, pb, d, a_col=k0, b_col=(d.terms - 1) * kp + k0, k=min(chunk, kp - k0),
                              alpha=1.0, beta=1.0)
    stages[f"hi*hi ({-(-kp // chunk)} x k={chunk})"] = hi
    if pa.exponent is not None:
        stages["unscale"] = lambda: cuda_split.unscale(c, pa, pb)
    return {name: time_ms(fn, reps) for name, fn in stages.items()}


def split_rates(a, b, d, reps):
    """Milliseconds and GB/s (bytes read and written, the pow2 exponent pass's read included) of the
    split of A and of B on (1, n, n) operands, as the kernel engines lay them out."""
    pad = cuda_split.padded_k(a.shape[-1], d)
    rates = {}
    for name, x, transpose in (("A", a, False), ("B", b, True)):
        op = cuda_split.split_operand(x, d, transpose=transpose, pad=pad)
        moved = x.nbytes * (1 if op.exponent is None else 2) + op.parts.nbytes
        ms = time_ms(lambda: cuda_split.split_operand(x, d, transpose=transpose, pad=pad), reps)
        rates[name] = (ms, moved / ms / 1e6)
    return rates


def sm90_kernel_ms(a, b, d, reps):
    """Milliseconds of ``gemm_split_sm90`` alone on (1, n, n) operands split beforehand."""
    pad = cuda_split.padded_k(a.shape[-1], d)
    pa = cuda_split.split_operand(a, d, transpose=False, pad=pad)
    pb = cuda_split.split_operand(b, d, transpose=True, pad=pad)
    c = cupy.empty((1, a.shape[1], b.shape[2]), np.float32)
    return time_ms(lambda: gemm_sm90.gemm_sm90(pa, pb, c, d, gemm_cublas.cublas_chunk(d, a.shape[-1])), reps)


class _GpuState:
    """nvidia-smi's SM clock (MHz), power (W) and active throttle reasons, sampled every 0.25 s by a
    thread while the GPU is kept busy; ``stop()`` returns the second half of the samples."""

    def __init__(self):
        self.samples, self.done = [], threading.Event()
        self.thread = threading.Thread(target=self._sample)
        self.thread.start()

    def _sample(self):
        while not self.done.is_set():
            out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
            self.samples.append(out.strip())
            time.sleep(0.25)

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.samples[len(self.samples) // 2:]


def limits(n, reps):
    """What limits ``gemm_split_sm90`` (fp16x3), in narrow TFLOP/s against cuBLAS's fp16 GEMM with
    float32 output over the same work (K = 3n) and over K = n: the kernel as is; without chunk
    promotions; with fp16x3's loads but only hi*hi, or hi*hi and one small product (the load path
    alone); the one-part bf16 kernel. Rounds interleave the cases (the GPU slows as it warms). Then
    three seconds of back-to-back runs of fp16x3 and of cuBLAS K = 3n, with the SM clock and power
    that nvidia-smi reports meanwhile: both run at the power limit, so narrow TFLOP/s per MHz compares
    the kernels."""
    a, b = (cupy.random.standard_normal((1, n, n), dtype=np.float32) for _ in range(2))
    d, one = sp.dtype("fp16x3"), sp.dtype("bf16")
    pad = cuda_split.padded_k(n, d)
    pa, pb = cuda_split.split_operand(a, d, transpose=False, pad=pad), cuda_split.split_operand(b, d, transpose=True, pad=pad)
    pad1 = cuda_split.padded_k(n, one)
    pa1 = cuda_split.split_operand(a, one, transpose=False, pad=pad1)
    pb1 = cuda_split.split_operand(b, one, transpose=True, pad=pad1)
    c = cupy.empty((1, n, n), np.float32)
    chunk = gemm_cublas.cublas_chunk(d, n)
    hi_only = dataclasses.replace(d, products=((0, 0),))
    two = dataclasses.replace(d, products=((0, 1), (0, 0)))
    a16, b16 = a[0].astype(np.float16).view(np.uint16), b[0].astype(np.float16).view(np.uint16)
    a3, b3 = cupy.concatenate([a16] * 3, axis=1), cupy.concatenate([b16] * 3, axis=0)
    cases = {  # name: (run, narrow products)
        "sm90 fp16x3": (lambda: gemm_sm90.gemm_sm90(pa, pb, c, d, chunk), 3),
        "sm90 fp16x3, no promotion": (lambda: gemm_sm90.gemm_sm90(pa, pb, c, d, n), 3),
        "sm90 fp16x3 loads, hi*hi only": (lambda: gemm_sm90.gemm_sm90(pa, pb, c, hi_only, chunk), 1),
        "sm90 fp16x3 loads, 2 products": (lambda: gemm_sm90.gemm_sm90(pa, pb, c, two, chunk), 2),
        "sm90 bf16 (one part)": (lambda: gemm_sm90.gemm_sm90(pa1, pb1, c, one, n), 1),
        "cuBLAS fp16, float32 out, K=3n": (lambda: cublas_gemm_ex(a3, b3, 2, 68), 3),
        "cuBLAS fp16, float32 out, K=n": (lambda: cublas_gemm_ex(a16, b16, 2, 68), 1),
    }
    flops = 2.0 * n ** 3
    rates = {name: [] for name in cases}
    for _ in range(3):
        for name, (run, products) in cases.items():
            rates[name].append(flops * products / time_ms(run, reps) / 1e9)
    print(f"n={n}: narrow TFLOP/s, three interleaved rounds")
    for name, values in rates.items():
        print(f"  {name:32s} " + "  ".join(f"{v:6.1f}" for v in values), flush=True)
    print("sustained 3 s: narrow TFLOP/s, then nvidia-smi samples (SM MHz, W, throttle reasons)")
    for name in ("sm90 fp16x3", "cuBLAS fp16, float32 out, K=3n"):
        run, products = cases[name]
        rate, samples = sustained(run, flops * products)
        print(f"  {name:32s} {rate:6.1f}  {samples}", flush=True)


def sustained(run, flops, seconds=3.0):
    """TFLOP/s of ``run`` (``flops`` each) called back to back for ``seconds``, and nvidia-smi's
    samples of the second half (at the board's power limit the GPU sets its own clock)."""
    run()
    cupy.cuda.Device().synchronize()
    state = _GpuState()
    start, stop, count, t0 = cupy.cuda.Event(), cupy.cuda.Event(), 0, time.time()
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(10):
            run()
        cupy.cuda.Device().synchronize()
        count += 10
    stop.record()
    stop.synchronize()
    return flops * count / cupy.cuda.get_elapsed_time(start, stop) / 1e9, state.stop()


TARGETS = (("fp16x3", 4.0), ("tf32x3", 2.5), ("bf16x9", 1.7))   # the speed targets at n = 8192, x SGEMM


def _narrow(x, base):
    """float32 ``x`` as the storage cublasGemmEx reads for ``base``."""
    if base == "fp16":
        return x.astype(np.float16).view(np.uint16)
    return to_bf16_bits(x) if base == "bf16" else x


def ceilings(n, reps):
    """What each speed target asks of the GPU, everything sustained for 3 s at the board's power
    limit: the narrow TFLOP/s the scheme's products need (target x SGEMM's rate, less the time of its
    split), what cuBLAS's own GEMM in the same narrow format runs over the same work (K = products x
    n, float32 out), what that composition would give with the split (x SGEMM), and the public call."""
    a, b = (cupy.random.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    flops = 2.0 * n ** 3
    sgemm, samples = sustained(lambda: cupy.matmul(a, b), flops)
    print(f"n={n}, each sustained 3 s; cuBLAS SGEMM {sgemm:.1f} TFLOP/s  {samples}")
    print("scheme  target  split ms  needed narrow  cuBLAS narrow  composed x SGEMM  public x SGEMM (TFLOP/s)")
    for name, ratio in TARGETS:
        d = sp.dtype(name)
        products = len(d.products)
        split_ms = sum(ms for ms, _ in split_rates(a[None], b[None], d, reps).values())
        needed = flops * products / (flops / (ratio * sgemm * 1e9) - split_ms) / 1e9
        code, compute = gemm_cublas.CUDA_TYPE[d.base], gemm_cublas.CUBLAS_COMPUTE[d.base]   # the cuBLAS engine's types
        wide_a = cupy.concatenate([_narrow(a, d.base)] * products, axis=1)
        wide_b = cupy.concatenate([_narrow(b, d.base)] * products, axis=0)
        vendor, vendor_samples = sustained(lambda: cublas_gemm_ex(wide_a, wide_b, code, compute), flops * products)
        del wide_a, wide_b
        composed = flops / (flops * products / (vendor * 1e9) + split_ms) / 1e9
        public, public_samples = sustained(lambda: sp.matmul(a, b, dtype=d), flops)
        print(f"{name:7s} {ratio:4.1f}x  {split_ms:8.3f}  {needed:13.1f}  {vendor:13.1f}  {composed / sgemm:16.2f}"
              f"  {public / sgemm:14.2f} ({public:.1f})\n        cuBLAS {vendor_samples}\n        public {public_samples}",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--one", metavar="SCHEME", help="run one sm90 product of SCHEME and stop")
    parser.add_argument("--limits", action="store_true", help="measure what limits the sm90 kernel and stop")
    parser.add_argument("--ceilings", action="store_true", help="measure what the speed targets ask of the GPU and stop")
    args = parser.parse_args()
    if args.limits:
        limits(args.n, args.reps)
        return
    if args.ceilings:
        ceilings(args.n, args.reps)
        return
    a, b = (cupy.random.standard_normal((args.n, args.n), dtype=np.float32) for _ in range(2))
    if args.one:
        cuda_gemm.matmul(a, b, sp.dtype(args.one), engine="sm90")
        cupy.cuda.Device().synchronize()
        return
    flops = 2.0 * args.n ** 3
    print(f"pow2 exponents of A {time_ms(lambda: cuda_split._pow2_exponents(a[None], sp.dtype('fp16x3').format, -1), args.reps):.3f}"
          f" / of B {time_ms(lambda: cuda_split._pow2_exponents(b[None], sp.dtype('fp16x3').format, -2), args.reps):.3f} ms")
    print(f"n={args.n}: TFLOP/s (2n^3/t) per engine; cuBLAS engine stages (ms); public - engine (ms)")
    for name in sp.dtypes("float32"):
        d = sp.dtype(name)
        times = {e: time_ms(lambda e=e: cuda_gemm.matmul(a, b, d, engine=e), args.reps) for e in ("sm90", "cublas")}
        kernel = sm90_kernel_ms(a[None], b[None], d, args.reps)
        public = time_ms(lambda: sp.matmul(a, b, dtype=d), args.reps)
        stages = cublas_stages(a[None], b[None], d, args.reps)
        splits = split_rates(a[None], b[None], d, args.reps)
        print(f"{name:7s} " + "  ".join(f"{e} {flops / t / 1e9:6.1f}" for e, t in times.items())
              + f"  public - engine(auto) {public - times[cuda_gemm.auto_engine(d, args.n, args.n, args.n, 1)]:5.2f} ms"
              + f"\n        sm90 kernel alone {kernel:.3f} ms: {flops * len(d.products) / kernel / 1e9:.1f} narrow TFLOP/s"
              + "\n        split " + ", ".join(f"{x} {ms:.3f} ms ({gbs:.0f} GB/s)" for x, (ms, gbs) in splits.items())
              + "\n        " + ", ".join(f"{s} {t:.3f}" for s, t in stages.items()), flush=True)


if __name__ == "__main__":
    main()
