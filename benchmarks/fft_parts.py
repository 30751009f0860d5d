"""GPU time of the fused FFT kernel by scheme: what the pipeline every scheme shares costs (one bf16
part, one product) and what each format and part count adds, beside cuFFT:
``PYTHONPATH=. python3 benchmarks/fft_parts.py``. Prints, per length (2**24 complex values), µs per
call of ``cuda_fft.forward`` in a stream (CUDA events, median of 7 rounds of 8 back-to-back calls)
and the normwise error against cupy's complex128 FFT."""
import pathlib
import sys

import cupy
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import splitprec as sp  # noqa: E402
from fft import DEFAULT, TOTAL, rel_error, throughput_ms  # noqa: E402
from splitprec.engines.cuda import fft as cuda_fft  # noqa: E402

SCHEMES = ("bf16", "bf16x3", "bf16x6", "tf32x3", "fp16", "fp16x3")


def main():
    for n in (256, 4096, 65536, 1000):
        x = cupy.asarray(np.random.default_rng(n).standard_normal((TOTAL // n, 2 * n)).astype(np.float32)
                         .view(np.complex64))
        ref = cupy.fft.fft(x.astype(np.complex128))
        row = [f"n={n}", f"cufft {1e3 * throughput_ms(lambda: cupy.fft.fft(x), 7):.0f}"]
        for name in SCHEMES:
            d = sp.dtype(name)
            run = lambda: cuda_fft.forward(x, d)   # noqa: E731
            row.append(f"{name} {1e3 * throughput_ms(run, 7):.0f} ({rel_error(run(), ref):.1e})")
        row.append(f"public {DEFAULT} {1e3 * throughput_ms(lambda: sp.fft.fft(x), 7):.0f}")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
