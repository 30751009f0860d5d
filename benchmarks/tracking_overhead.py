"""CPU-engine cost of error tracking: a chain on tracked arrays over the same chain on SplitArrays.

Chains: the ten elementwise steps of ``accuracy.tracking_report.ELEMENTWISE``; five products by
a 512 x 512 matrix, each followed by a scaling (product-dominated); an FFT of 64 lines of 4096, a
scaling and the inverse FFT (FFT-dominated). Each is checked first (finite bounds, and the
untracked values within the bound plus 4 float32 ulps: tracked exp and log round a float64
evaluation once, numpy's float32 ones may differ by an ulp or two), then timed: median of 5 runs after one warm-up. Prints
one row per chain: untracked ms, tracked ms, ratio, and writes them to
``benchmarks/results/tracking-overhead-<date>-<sha>.json`` with the machine's description.
Run: ``python benchmarks/tracking_overhead.py [--out DIR]``.
"""
import argparse
import json
import pathlib
import statistics
import time

import numpy as np

import splitprec as sp
from cpu_engine import machine
from splitprec.accuracy.tracking_report import ELEMENTWISE

RNG = np.random.default_rng(0)


def elementwise(x, _):
    for name, constant in ELEMENTWISE:
        x = getattr(np, name)(x) if constant is None else getattr(np, name)(x, constant)
    return x


def products(x, matrix):
    for _ in range(5):
        x = (x @ matrix) * 0.5
    return x


def transforms(x, _):
    return sp.fft.ifft(sp.fft.fft(x) * 0.5)


def _median_ms(function, *args):
    function(*args)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    rows = []
    cases = [("elementwise, 10 steps, 4096 entries", elementwise, (64, 64), None),
             ("elementwise, 10 steps, 1M entries", elementwise, (1024, 1024), None),
             ("5 x (512x512 product, scaling)", products, (512, 512), (512, 512)),
             ("fft, scaling, ifft (64 x 4096)", transforms, (64, 4096), None)]
    print(f"{'chain':<40} {'untracked ms':>13} {'tracked ms':>11} {'ratio':>6}")
    for title, chain, shape, matrix_shape in cases:
        data = RNG.uniform(1, 2, shape).astype(np.float32)
        matrix = None if matrix_shape is None else (RNG.uniform(0, 2, matrix_shape) / matrix_shape[0]).astype(np.float32)
        plain = sp.asarray(data, dtype="bf16x9")
        tracked = sp.asarray(data, dtype="bf16x9", track_error=True)
        plain_m = None if matrix is None else sp.asarray(matrix, dtype="bf16x9")
        tracked_m = None if matrix is None else sp.asarray(matrix, dtype="bf16x9", track_error=True)
        result = chain(tracked, tracked_m)
        expected = np.asarray(chain(plain, plain_m))
        assert np.isfinite(result.error_bound).all()
        assert (np.abs(result.value - expected) <= result.error_bound + 4 * np.spacing(np.abs(expected))).all()
        untracked_ms, tracked_ms = _median_ms(chain, plain, plain_m), _median_ms(chain, tracked, tracked_m)
        print(f"{title:<40} {untracked_ms:13.2f} {tracked_ms:11.2f} {tracked_ms / untracked_ms:6.2f}")
        rows.append({"chain": title, "untracked_ms": untracked_ms, "tracked_ms": tracked_ms,
                     "ratio": tracked_ms / untracked_ms})
    head = machine()
    path = pathlib.Path(args.out) / f"tracking-overhead-{head['date'][:10]}-{head['git_sha']}.json"
    path.write_text(json.dumps({**head, "scheme": "bf16x9", "results": rows}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
