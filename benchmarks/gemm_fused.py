"""Where the fused GEMM engine pays: its time against the split engines' and cuBLAS SGEMM's on
batches of small products, per scheme, to set ``tuning.json``'s ``fused`` thresholds.

Per shape (m = n, k, a batch of about 2**30 multiply-adds) and scheme: CUDA-event time (median of
``--reps`` after 0.5 s of warm-up) of each fused kernel (warp and block) and of the engine ``"auto"``
takes without them, beside SGEMM; each fused result's bits against the mma.sync engine's. Writes
``benchmarks/results/gemm-fused-<date>-<sha>.json`` and prints, per fused kernel, the (m = n, k) at
which it is the faster for every scheme.
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

SIDES = (8, 16, 32, 48, 64, 128, 256)
K_OF_SIDE = {side: sorted({min(side, 64), 256}) for side in SIDES}     # square up to the warp kernel's k, and long
SCHEMES = ("tf32x3", "fp16x3", "bf16x6", "bf16x9")
KERNELS = {"warp": 1 << 30, "block": 0}                        # gemm_fused.WARP_MAX_MN that picks each
WORK = 1 << 30
WARP_MAX_MN = gemm_fused.WARP_MAX_MN


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
        for k in K_OF_SIDE[side]:
            batch = max(1, WORK // (side * side * k))
            a = cupy.asarray(rng.standard_normal((batch, side, k), dtype=np.float32))
            b = cupy.asarray(rng.standard_normal((batch, k, side), dtype=np.float32))
            sgemm_us = bench.time_ms(lambda: cupy.matmul(a, b), args.reps) * 1e3
            for name in SCHEMES:
                d = sp.dtype(name)
                engine = split_engine(d, side, side, k, batch)
                mma_sync = cuda_gemm.matmul(a, b, d, engine="sm80", tile=cuda_gemm.SMALL_TILE, checked=True)
                record = {"m": side, "n": side, "k": k, "batch": batch, "scheme": name, "split_engine": engine,
                          "split_us": bench.time_ms(lambda: cuda_gemm.matmul(a, b, d, engine=engine, checked=True),
                                                    args.reps) * 1e3, "sgemm_us": sgemm_us}
                for kernel, limit in KERNELS.items():
                    if kernel == "warp" and k > gemm_fused.WARP_MAX_K:
                        record["warp_us"] = record["warp_bit_identical"] = None
                        continue
                    gemm_fused.WARP_MAX_MN = limit
                    fused = cuda_gemm.matmul(a, b, d, engine="fused")
                    record[f"{kernel}_us"] = bench.time_ms(lambda: cuda_gemm.matmul(a, b, d, engine="fused"),
                                                           args.reps) * 1e3
                    record[f"{kernel}_bit_identical"] = bool((fused.view(np.uint32) == mma_sync.view(np.uint32)).all())
                gemm_fused.WARP_MAX_MN = WARP_MAX_MN
                records.append(record)
                warp_us = record["warp_us"] or float("nan")
                print(f"{side:4d}^2 x {k:4d} x {batch:7d} {name:7s} warp {warp_us:9.1f} block "
                      f"{record['block_us']:9.1f} {engine:6s} {record['split_us']:9.1f}  sgemm {sgemm_us:9.1f} us  "
                      f"same {record['warp_bit_identical']} {record['block_bit_identical']}", flush=True)
    for kernel in KERNELS:
        wins = {}
        for r in records:
            if r[f"{kernel}_us"] is not None:
                wins[r["m"], r["k"]] = wins.get((r["m"], r["k"]), True) and r[f"{kernel}_us"] < r["split_us"]
        print(f"{kernel} kernel faster than the split engines for every scheme at (m = n, k):",
              sorted(key for key, won in wins.items() if won))
    out = pathlib.Path(args.out) / f"gemm-fused-{head['date'][:10]}-{head['git_sha']}.json"
    out.write_text(json.dumps({**head, "work": WORK, "schemes": SCHEMES, "results": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
