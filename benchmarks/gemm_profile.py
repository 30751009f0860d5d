"""Where the GEMM time goes: engine-only times of the wgmma and mma.sync kernels, the split alone,
and the public call's overhead (non-finite checks), at one size; ``--one`` runs a single product
for a profiler (``ncu --clock-control none -k regex:gemm_split python3 benchmarks/gemm_profile.py --one``).
"""
import argparse

import cupy
import numpy as np

import splitprec as sp
from splitprec import _gpu
from benchmarks.gemm import time_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--one", metavar="SCHEME", help="run one sm90 product of SCHEME and stop")
    args = parser.parse_args()
    a, b = (cupy.random.standard_normal((args.n, args.n), dtype=np.float32) for _ in range(2))
    if args.one:
        _gpu.matmul(a, b, sp.dtype(args.one), engine="sm90")
        cupy.cuda.Device().synchronize()
        return
    flops = 2.0 * args.n ** 3
    print(f"n={args.n}: TFLOP/s (2n^3/t) of the engine alone, the split alone (ms), public overhead (ms)")
    for name in sp.dtypes():
        d = sp.dtype(name)
        pad = _gpu.padded_k(args.n, d)
        split_ms = time_ms(lambda: (_gpu.split_operand(a[None], d, transpose=False, pad=pad),
                                    _gpu.split_operand(b[None], d, transpose=True, pad=pad)), 10)
        t90 = time_ms(lambda: _gpu.matmul(a, b, d, engine="sm90"), 10)
        t80 = time_ms(lambda: _gpu.matmul(a, b, d, engine="sm80"), 10)
        public = time_ms(lambda: sp.matmul(a, b, dtype=d), 10)
        print(f"{name:7s} sm90 {flops / t90 / 1e9:6.1f}  sm80 {flops / t80 / 1e9:6.1f}  split {split_ms:6.2f} ms  "
              f"public - engine(auto) {public - min(t90, t80):6.2f} ms", flush=True)


if __name__ == "__main__":
    main()
