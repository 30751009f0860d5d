"""Where the GPU time of small, batched and skinny products goes: per scheme, in µs (CUDA events
around one call, median of 10, so each includes its launch), the pow2 exponents of A and of B (a
pass of their own where K exceeds one split tile; below that the split finds them), the split of A
and of B (pow2 exponents included) for the kernels and for cuBLAS, each engine's
products alone on split operands (mma.sync with the tuned tile and with smaller ones), each engine
whole, and the public call: ``PYTHONPATH=. python3 benchmarks/gemm_stages.py``."""
import cupy
import numpy as np

import splitprec as sp
from splitprec.engines.cuda import gemm as cuda_gemm, gemm_cublas, gemm_sm80, gemm_sm90, split as cuda_split
from benchmarks.gemm import time_ms

CASES = [(64, 64, 64, 4096), (2048, 2048, 2048, 1), (128, 8192, 8192, 1)]
SMALLER_TILES = [gemm_sm80.Tile(2, 2, 2, 2), gemm_sm80.Tile(2, 2, 4, 2)]


def stages(a, b, d, reps=10):
    """{stage: ms} of one scheme on (batch, m, k) and (batch, k, n) operands."""
    k = a.shape[-1]
    pad, chunk = cuda_split.padded_k(k, d), gemm_cublas.cublas_chunk(d, k)
    row = {}
    if d.scaling == "pow2" and k > cuda_split.SPLIT_TILE:
        row["expA"] = time_ms(lambda: cuda_split._pow2_exponents(a, d.format, -1), reps)
        row["expB"] = time_ms(lambda: cuda_split._pow2_exponents(b, d.format, -2), reps)
    row["splitA"] = time_ms(lambda: cuda_split.split_operand(a, d, transpose=False, pad=pad), reps)
    row["splitB"] = time_ms(lambda: cuda_split.split_operand(b, d, transpose=True, pad=pad), reps)
    row["stackA"] = time_ms(lambda: cuda_split.split_stacked(a, d, transpose=False, pad=pad), reps)
    pa, pb = cuda_split.split_operand(a, d, transpose=False, pad=pad), cuda_split.split_operand(b, d, transpose=True, pad=pad)
    c = cupy.empty((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    row["sm90"] = time_ms(lambda: gemm_sm90.gemm_sm90(pa, pb, c, d, chunk), reps)
    for t in [cuda_gemm.TILES.get(d.name, cuda_gemm.DEFAULT_TILE)] + SMALLER_TILES:
        if gemm_sm80.fits(d, t):
            label = f"sm80 {t.mt}/{t.warps_m}x{t.warps_n}x{t.stages}"
            row[label] = time_ms(lambda t=t: gemm_sm80.gemm_sm80(pa, pb, c, d, t), reps)
    sa, sb = cuda_split.split_stacked(a, d, transpose=False, pad=pad), cuda_split.split_stacked(b, d, transpose=True, pad=pad)
    row["cublas products"] = time_ms(lambda: gemm_cublas.gemm_cublas(sa, sb, c, d, chunk), reps)
    for engine in ("sm90", "sm80", "cublas"):
        row[f"engine {engine}"] = time_ms(lambda e=engine: cuda_gemm.matmul(a, b, d, engine=e), reps)
    row["public"] = time_ms(lambda: sp.matmul(a, b, dtype=d), reps)
    return row


def main():
    for m, n, k, batch in CASES:
        a = cupy.random.standard_normal((batch, m, k), dtype=np.float32)
        b = cupy.random.standard_normal((batch, k, n), dtype=np.float32)
        print(f"== {m}x{n}x{k}x{batch}: sgemm {time_ms(lambda: cupy.matmul(a, b), 10) * 1e3:.1f} us")
        for name in ("fp16x3", "tf32x3", "bf16x6"):
            row = stages(a, b, sp.dtype(name))
            print(f"{name}: " + ", ".join(f"{key} {ms * 1e3:.1f}" for key, ms in row.items()), flush=True)


if __name__ == "__main__":
    main()
