"""Time every split ``n1 x n2`` of each power of two 2**13..2**24 (fused kernel, bf16x6, 2**24 values),
``n2`` in one step or in two by the engine's rule (three launches), the measurement behind
``splitprec.fft_plan._power_of_two_split``:
``PYTHONPATH=. python3 benchmarks/fft_splits.py``. Prints, per length, µs per transform of the batch
for each ``n1 x n2`` (CUDA events, median of 5 rounds of 8 back-to-back calls)."""
import pathlib
import sys

import cupy
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import splitprec as sp  # noqa: E402
from fft import throughput_ms  # noqa: E402
from splitprec.engines.cuda import fft as cuda_fft  # noqa: E402
from splitprec.engines import plan as fft_plan  # noqa: E402

TOTAL = 2 ** 24


def main():
    d = sp.dtype("bf16x6")
    chosen = fft_plan.four_step_lengths
    for e in range(13, 25):
        n = 2 ** e
        x = cupy.random.standard_normal((TOTAL // n, 2 * n), dtype=np.float32).view(np.complex64)
        row = []
        for a in range(4, 13):
            split = (2 ** a, n >> a)
            if split[1] < 16 or split[1] > 4096 and chosen(split[1]) is None:
                continue                                  # n2 in one step, or in two (three launches)
            fft_plan.four_step_lengths = lambda m, n=n, split=split: split if m == n else chosen(m)
            fft_plan.plan.cache_clear()
            mark = "*" if split == chosen(n) else ""
            us = 1e3 * throughput_ms(lambda: cuda_fft.forward(x, d), 5)
            row.append(f"{split[0]}x{split[1]}{mark}: {us:.0f}")
        fft_plan.four_step_lengths = chosen
        fft_plan.plan.cache_clear()
        print(f"2**{e}", " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
