"""Where the fused GEMM engine pays: its time against the split engines' and cuBLAS SGEMM's on
batches of small products, per scheme, to set ``tuning.json``'s ``fused`` thresholds.

Per shape (m = n, k, a batch of about 2**30 multiply-adds) and scheme: CUDA-event time (median of
``--reps`` after 0.5 s of warm-up) of ``engine="fused"`` and of the engine ``"auto"`` takes without
it, beside SGEMM; the fused result's bits against the mma.sync engine's. Writes
``benchmarks/results/gemm-fused-<date>-<sha>.json`` and prints the (m = n, k) at which the fused
engine is the faster for every scheme.
Usage: ``python3 benchmarks/gemm_fused.py [--out DIR] [--reps N]``.
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
from splitprec.engines.cuda import gemm as cuda_gemm, gemm_fused  # noqa: E402

SIDES = (8, 16, 24, 32, 48, 64)
K_VALUES = (16, 32, 64)                 # and k = m = n
SCHEMES = ("tf32x3", "fp16x3", "bf16x6", "bf16x9")
WORK = 1 << 30


def split_engine(d, m, n, k, batch):
    """The engine ``"auto"`` takes for this product with the fused engine left out."""
    saved = cuda_gemm.FUSED
    cuda_gemm.FUSED = {"max_mn": 0, "max_k": 0}
    try:
        return cuda_gemm.auto_engine(d, m, n, k, batch)
    finally:
        cuda_gemm.FUSED = saved


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "results"))
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args(argv)
    head = bench.header()
    rng = np.random.default_rng(0)
    records = []
    for side in SIDES:
        for k in sorted({side, *K_VALUES} & set(range(1, gemm_fused.MAX_K + 1))):
            batch = max(1, WORK // (side * side * k))
            a = cupy.asarray(rng.standard_normal((batch, side, k), dtype=np.float32))
            b = cupy.asarray(rng.standard_normal((batch, k, side), dtype=np.float32))
            sgemm_us = bench.time_ms(lambda: cupy.matmul(a, b), args.reps) * 1e3
            for name in SCHEMES:
                d = sp.dtype(name)
                engine = split_engine(d, side, side, k, batch)
                fused = cuda_gemm.matmul(a, b, d, engine="fused")
                mma_sync = cuda_gemm.matmul(a, b, d, engine="sm80", tile=cuda_gemm.SMALL_TILE, checked=True)
                record = {"m": side, "n": side, "k": k, "batch": batch, "scheme": name, "split_engine": engine,
                          "fused_us": bench.time_ms(lambda: cuda_gemm.matmul(a, b, d, engine="fused"), args.reps) * 1e3,
                          "split_us": bench.time_ms(lambda: cuda_gemm.matmul(a, b, d, engine=engine, checked=True),
                                                    args.reps) * 1e3,
                          "sgemm_us": sgemm_us,
                          "bit_identical": bool((fused.view(np.uint32) == mma_sync.view(np.uint32)).all())}
                records.append(record)
                print(f"{side:3d}^2 x {k:3d} x {batch:7d} {name:7s} fused {record['fused_us']:8.1f} us  "
                      f"{engine:6s} {record['split_us']:8.1f} us  sgemm {sgemm_us:8.1f} us  "
                      f"same bits {record['bit_identical']}", flush=True)
    wins = {}
    for r in records:
        wins[r["m"], r["k"]] = wins.get((r["m"], r["k"]), True) and r["fused_us"] < r["split_us"]
    print("fused faster than the split engines for every scheme at (m = n, k):",
          sorted(key for key, won in wins.items() if won))
    out = pathlib.Path(args.out) / f"gemm-fused-{head['date'][:10]}-{head['git_sha']}.json"
    out.write_text(json.dumps({**head, "work": WORK, "schemes": SCHEMES, "results": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
