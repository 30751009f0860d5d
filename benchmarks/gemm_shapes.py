"""GEMM shapes benchmark on the GPU: square, batched and skinny products, every fp32-class scheme and
``precision="fp32"`` (and, for small products, its two float32 paths: ``sgemm_small`` and SGEMM with
its fix-up) beside cuBLAS SGEMM and TF32, each shape's ceiling in the same run.

Per row: CUDA-event time of one call queued behind a spin kernel (``event_us``: the GPU's time, not
the host's gaps between the call's launches; ``gemm.device_us``, median of ``--reps`` after 0.5 s of
warm-up), per-call wall time over a loop of calls ended by one synchronize (``wall_us``: host cost
included), TFLOP/s = 2*m*n*k*batch /
event time, the normwise error against a float64 product. A shape's ceiling for a scheme is the larger
of its bytes (float32 A, B read once, C written once) over the copy bandwidth measured here and its
narrow products over the sustained rate of cuBLAS's own narrow GEMM measured here (fp16 / bf16 with
float32 accumulation, TF32). Writes ``benchmarks/results/gemm-shapes-<date>-<sha>.json``.
Usage: ``python3 benchmarks/gemm_shapes.py [--out DIR] [--shapes m,n,k,batch ...]``.
"""
import argparse
import json
import pathlib
import sys
import time

import numpy as np
import cupy

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gemm as bench  # noqa: E402  (time_ms, rel_error, cublas_gemm_ex, header)
import readme_table  # noqa: E402  (shapes_table)
import splitprec as sp  # noqa: E402
from splitprec.engines.cuda import gemm_cublas, nonfinite, sgemm_small  # noqa: E402

SHAPES = [(512, 512, 512, 1), (1024, 1024, 1024, 1), (2048, 2048, 2048, 1), (64, 64, 64, 4096),
          (32, 32, 32, 16384), (16, 16, 16, 65536), (256, 256, 256, 512), (128, 8192, 8192, 1),
          (8192, 64, 8192, 1), (3000, 5000, 700, 1), (8192, 8192, 1024, 1), (4096, 4096, 4096, 1),
          (8192, 8192, 8192, 1), (16384, 16384, 16384, 1)]     # the largest last: a cut run keeps the rest
# fp32-class schemes, and fp16x3 (fp32 accuracy within its 28-binade span of each row and column)
SCHEMES = [name for name in sp.dtypes("float32") if sp.dtype(name).fp32_class] + ["fp16x3"]
RATE_FORMATS = {"fp16": (2, 68), "bf16": (14, 68), "tf32": (0, 77)}   # cudaDataType, cublasComputeType
WALL_SECONDS = 0.2


def wall_us(fn, seconds=WALL_SECONDS):
    """Microseconds per call of ``fn`` called back to back for about ``seconds``, one synchronize."""
    fn()
    cupy.cuda.Device().synchronize()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            fn()
        calls += 10
    cupy.cuda.Device().synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def copy_bandwidth():
    """Bytes read plus written per second by a 2 GiB device-to-device copy."""
    x = cupy.random.standard_normal(1 << 28, dtype=np.float32)
    y = cupy.empty_like(x)
    ms = bench.time_ms(lambda: y.__setitem__(Ellipsis, x), 10)
    return 2 * x.nbytes / (ms * 1e-3)


def narrow_rates():
    """Sustained FLOP/s of cuBLAS's fp16, bf16 (float32 accumulation) and TF32 GEMMs at 8192^3."""
    n = 8192
    a = cupy.random.standard_normal((n, n), dtype=np.float32)
    rates = {}
    for base, (dtype_code, compute) in RATE_FORMATS.items():
        x = a if base == "tf32" else (a.astype(np.float16).view(np.uint16) if base == "fp16" else bench.to_bf16_bits(a))
        ms = bench.time_ms(lambda: bench.cublas_gemm_ex(x, x, dtype_code, compute), 10)
        rates[base] = 2 * n ** 3 / (ms * 1e-3)
    return rates


def operands(m, n, k, batch, rng):
    shape_a, shape_b = ((batch, m, k), (batch, k, n)) if batch > 1 else ((m, k), (k, n))
    return (cupy.asarray(rng.standard_normal(shape_a, dtype=np.float32)),
            cupy.asarray(rng.standard_normal(shape_b, dtype=np.float32)))


def ceiling_us(m, n, k, batch, products, rate, bandwidth):
    """The larger of the bytes over the copy bandwidth and the narrow products over their rate."""
    data = 4 * batch * (m * k + k * n + m * n)
    return max(data / bandwidth, products * 2 * m * n * k * batch / rate) * 1e6


def float32_paths(a, b):
    """``precision="fp32"``'s two float32 paths on ``a``, ``b`` as a batch, ``[(name, call)]``, where
    the shape allows ``sgemm_small``: it (``"sgemm_small"``) and cuBLAS SGEMM with its fix-up
    (``"sgemm_path"``), the two the dispatch chooses between there."""
    a3, b3 = (x if x.ndim == 3 else x[None] for x in (a, b))
    (batch, m, k), n = a3.shape, b3.shape[-1]
    if max(m, n, k) > sgemm_small.MAX:
        return []
    empty = lambda: cupy.empty((batch, m, n), np.float32)  # noqa: E731
    return [("sgemm_small", lambda: sgemm_small.sgemm_small(a3, b3, empty())),
            ("sgemm_path", lambda: nonfinite.fix_sgemm(a3, b3, gemm_cublas.sgemm(a3, b3, empty())))]


def rows(a, b):
    """(name, call, products, base) of one shape: the anchors, each scheme, the float32 paths where
    the shape allows ``sgemm_small``, ``precision="fp32"``."""
    out = [("cublas_sgemm", lambda: cupy.matmul(a, b), None, None)]
    if a.ndim == 2:
        out.append(("cublas_tf32", lambda: bench.cublas_gemm_ex(a, b, 0, 77), 1, "tf32"))
    out += [(name, call, None, None) for name, call in float32_paths(a, b)]
    for name in SCHEMES:
        d = sp.dtype(name)
        out.append((name, lambda name=name: sp.matmul(a, b, dtype=name), len(d.products), d.base))
    out.append(("precision_fp32", lambda: sp.matmul(a, b, precision="fp32"), None, None))
    return out


def run_shape(shape, reps, rng, bandwidth, rates):
    m, n, k, batch = shape
    a, b = operands(m, n, k, batch, rng)
    ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
    flops = 2 * m * n * k * batch
    records = []
    for name, call, products, base in rows(a, b):
        error = bench.rel_error(call(), ref)
        us = bench.device_us(call, reps)
        record = {"m": m, "n": n, "k": k, "batch": batch, "name": name, "event_us": us,
                  "wall_us": wall_us(call), "tflops": flops / (us * 1e-6) / 1e12, "rel_error": error}
        if products:
            record["ceiling_us"] = ceiling_us(m, n, k, batch, products, rates[base], bandwidth)
        records.append(record)
        print(f"{m}x{n}x{k}x{batch} {name:15s} {record['event_us']:10.1f} us  wall {record['wall_us']:8.1f} us"
              f"  {record['tflops']:7.1f} TFLOP/s  err {error:.2e}"
              + (f"  ceiling {record['ceiling_us']:.1f} us" if products else ""), flush=True)
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "results"))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--shapes", nargs="*", default=None, help="m,n,k,batch each (default: the list above)")
    args = parser.parse_args(argv)
    shapes = [tuple(map(int, s.split(","))) for s in args.shapes] if args.shapes else SHAPES
    head = bench.header()
    bandwidth, rates = copy_bandwidth(), narrow_rates()
    print(f"copy {bandwidth / 1e12:.2f} TB/s; narrow TFLOP/s " +
          ", ".join(f"{k} {v / 1e12:.0f}" for k, v in rates.items()), flush=True)
    rng = np.random.default_rng(0)
    out = pathlib.Path(args.out) / f"gemm-shapes-{head['date'][:10]}-{head['git_sha']}.json"
    records = []
    for shape in shapes:                  # the file is rewritten after each shape: a cut run keeps its rows
        records += run_shape(shape, args.reps, rng, bandwidth, rates)
        out.write_text(json.dumps({**head, "copy_bytes_per_s": bandwidth, "narrow_flops_per_s": rates,
                                   "schemes": SCHEMES, "shapes": shapes, "results": records}, indent=1))
    print(readme_table.shapes_table([(out, json.loads(out.read_text()))]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
