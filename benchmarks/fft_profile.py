"""Run one batched fused FFT per scheme, for a profiler:
``ncu --clock-control none -k regex:fft_stockham python3 benchmarks/fft_profile.py [--n 4096]``.
"""
import argparse

import cupy
import numpy as np

import splitprec as sp


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--schemes", default="bf16x6,tf32x3")
    args = parser.parse_args()
    x = cupy.random.standard_normal((2 ** 24 // args.n, 2 * args.n), dtype=np.float32).view(np.complex64)
    for name in args.schemes.split(","):
        sp.fft.fft(x, dtype=name)
    cupy.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
