"""Split once, multiply many on the GPU: ``sp.matmul`` on cupy float32 arrays (both operands split
every call) against products of gpu SplitArrays whose device split is cached (the right operand
only, as for a fixed matrix applied to new data, and both), with cuBLAS SGEMM in the same run.
Each row is timed after half a second of the same call (``benchmarks.gemm.time_ms``; the split is
made by the warm-up calls, so the cached rows time the products alone), in interleaved rounds
(forward, backward, ...: the GPU's clock follows its power draw), each row the median of its rounds.
Usage: ``PYTHONPATH=. python3 benchmarks/gemm_cached.py [--out benchmarks/results]``; writes
``gemm-cached-<date>-<sha>.json`` (gemm.py's header; records with ``"operands"``)."""
import argparse
import json
import pathlib

import cupy
import numpy as np

import splitprec as sp
from benchmarks.gemm import header, rel_error, time_ms

CASES = [(8192, 8192, 8192, 1), (2048, 2048, 2048, 1), (128, 8192, 8192, 1), (64, 64, 64, 4096)]
SCHEMES = ("fp16x3", "tf32x3", "bf16x6", "bf16x9")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    head, results = header(), []
    for m, n, k, batch in CASES:
        shape_a, shape_b = ((batch,) if batch > 1 else ()) + (m, k), ((batch,) if batch > 1 else ()) + (k, n)
        a = cupy.random.standard_normal(shape_a, dtype=np.float32)
        b = cupy.random.standard_normal(shape_b, dtype=np.float32)
        ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
        flops = 2.0 * m * n * k * batch
        rows = [("cublas_sgemm", "arrays", lambda: cupy.matmul(a, b))]
        for name in SCHEMES:
            sa, sb = sp.asarray(a, dtype=name), sp.asarray(b, dtype=name)
            rows += [(name, "arrays", lambda name=name: sp.matmul(a, b, dtype=name)),
                     (name, "B cached", lambda sb=sb: sp.matmul(a, sb)),
                     (name, "both cached", lambda sa=sa, sb=sb: sa @ sb)]
        rounds = [[] for _ in rows]
        for r in range(args.rounds):
            for i in range(len(rows)) if r % 2 == 0 else reversed(range(len(rows))):
                rounds[i].append(flops / time_ms(rows[i][2], args.reps) / 1e9)
        for (name, operands, run), rates in zip(rows, rounds):
            error = rel_error(cupy.asarray(run()), ref)
            results.append({"op": "gemm", "name": name, "operands": operands, "m": m, "n": n, "k": k,
                            "batch": batch, "tflops": float(np.median(rates)), "tflops_rounds": rates,
                            "rel_error": error})
            print(f"{m}x{n}x{k}x{batch} {name:13s} {operands:12s} {np.median(rates):7.1f} TFLOP/s "
                  f"({min(rates):.1f}-{max(rates):.1f})  error {error:.2e}", flush=True)
    out = pathlib.Path(args.out) / f"gemm-cached-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
