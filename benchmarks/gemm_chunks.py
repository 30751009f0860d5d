"""The cuBLAS engine's speed and error against its hi*hi chunk (H200, n = 8192).

``PYTHONPATH=. python3 benchmarks/gemm_chunks.py [--n 8192]`` prints, per scheme and chunk, TFLOP/s
(``2*n**3 / t``, split included), the ratio to cuBLAS SGEMM timed in the same run, and the normwise
error against a float64 product. It chooses ``chunk.per_sqrt_k`` in ``splitprec/engines/cuda/tuning.json``.
"""
import argparse

import cupy

import splitprec as sp
from splitprec.engines.cuda import gemm as cuda_gemm

from gemm import rel_error, time_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--chunks", default="256,512,1024,2048,8192")
    parser.add_argument("--schemes", default="fp16x3,tf32x3,bf16x6,bf16x9,bf16x3")
    args = parser.parse_args()
    n = args.n
    a = cupy.random.standard_normal((n, n), dtype=cupy.float32)
    b = cupy.random.standard_normal((n, n), dtype=cupy.float32)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    flops = 2.0 * n ** 3
    sgemm_ms = time_ms(lambda: a @ b, 10)
    print(f"cublas_sgemm {flops / sgemm_ms / 1e9:.1f} TFLOP/s error {rel_error(a @ b, ref):.2e}", flush=True)
    for name in args.schemes.split(","):
        d = sp.dtype(name)
        for chunk in map(int, args.chunks.split(",")):
            def run():
                return cuda_gemm.matmul(a, b, d, engine="cublas", chunk=chunk)
            result = run()
            ms = time_ms(run, 10)
            tflops = flops / ms / 1e9
            print(f"{name:7s} chunk {chunk:5d}: {tflops:6.1f} TFLOP/s  x{sgemm_ms / ms:5.2f} SGEMM  "
                  f"error {rel_error(result, ref):.2e}", flush=True)


if __name__ == "__main__":
    main()
