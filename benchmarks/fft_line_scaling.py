"""What the FFT's power-of-two line scaling costs on the GPU, before and after it moved into the fused
kernel: ``python3 benchmarks/fft_line_scaling.py [--out DIR]``.

For each length the fused kernel runs in one launch (2**24 complex64 values per call), the same
transform three ways in one run: cuFFT (``cupy.fft.fft``); the scaling as separate passes around
the fused kernel (``Stockham.forward`` on the CUDA engine: an exponent pass, a scaling copy before
and after); the scaling inside the kernel's load and store (``splitprec.fft.fft``). The last two
must give the same bits (asserted). Event times after 0.5 s of warm-up; JSON
``benchmarks/results/fft-line-scaling-<date>-<sha>.json``.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import cupy

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gemm as bench  # noqa: E402  (time_ms, header)
import splitprec as sp  # noqa: E402
from splitprec.engines.cuda import fft as cuda_fft  # noqa: E402
from splitprec.engines.reference.fft import Stockham  # noqa: E402

LENGTHS = [64, 256, 1024, 4096, 720, 2401]
SCHEMES = ["bf16x6", "tf32x3", "fp16x3"]
VALUES = 1 << 24


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    head = bench.header()
    rng = np.random.default_rng(0)
    records = []
    for n in LENGTHS:
        lines = VALUES // n
        x = cupy.asarray(rng.standard_normal((lines, 2 * n), dtype=np.float32)).view(np.complex64)
        cufft_us = bench.time_ms(lambda: cupy.fft.fft(x), 10) * 1e3
        for name in SCHEMES:
            d = sp.dtype(name)
            separate = lambda: Stockham.forward(cuda_fft.ENGINE, x, d)   # noqa: E731
            fused = lambda: sp.fft.fft(x, dtype=name)                     # noqa: E731
            assert cupy.array_equal(separate().view(np.uint32), fused().view(np.uint32)), (n, name)
            record = {"n": n, "lines": lines, "name": name, "cufft_us": cufft_us,
                      "separate_passes_us": bench.time_ms(separate, 10) * 1e3,
                      "in_kernel_us": bench.time_ms(fused, 10) * 1e3}
            records.append(record)
            print(f"n {n:5d} {name:7s} cuFFT {cufft_us:7.1f} us  separate passes {record['separate_passes_us']:7.1f}"
                  f"  in kernel {record['in_kernel_us']:7.1f}", flush=True)
    out = pathlib.Path(args.out) / f"fft-line-scaling-{head['date'][:10]}-{head['git_sha']}.json"
    out.write_text(json.dumps({**head, "values_per_call": VALUES, "results": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
