"""fp64 GEMM benchmark on the GPU: the Ozaki-II schemes ``ozaki2_int8x<N>`` beside cuBLAS DGEMM.

Checks accuracy first: on an N(0,1) case (m = n = 1024, k = 8192) each scheme's error stays within
``accuracy.gemm_bound`` of the exact product (``accuracy.exact_matmul``) and its normwise error
is recorded next to DGEMM's (asserted). Then times ``sp.matmul`` of each scheme and
``cupy.matmul`` of float64 (cuBLAS DGEMM) in the same run at n = 4096, 8192, 16384 on N(0,1) data
(CUDA events, 2 warm-ups, median of ``--reps``), with the normwise difference from DGEMM, and the
stages of the engine (residues, int8 GEMMs batched or one gemmEx each, CRT) at n = 8192. TFLOP/s = 2*m*n*k*batch / time.
Writes ``benchmarks/results/gemm-fp64-<date>-<sha>.json``.
Usage: ``PYTHONPATH=. python3 benchmarks/gemm_fp64.py [--reps 5] [--schemes ...] [--out DIR]``.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import cupy

import splitprec as sp
from accuracy import exact_matmul, gemm_bound
from splitprec.engines.cuda import ozaki as cuda_ozaki

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from gemm import header, time_ms  # noqa: E402

SIZES = (4096, 8192, 16384)
SCHEMES = ("ozaki2_int8x13", "ozaki2_int8x14", "ozaki2_int8x15", "ozaki2_int8x16")
STRIDED_SCHEME = "ozaki2_int8x14"     # also timed with its GEMMs as one strided batch


def normwise(c, ref):
    return float(np.linalg.norm(c - ref) / np.linalg.norm(ref))


def check_accuracy(schemes, m=1024, k=8192):
    """Records of the errors against the exact product; every scheme within its bound (asserted)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, m))
    exact = exact_matmul(a, b)
    ga, gb = cupy.asarray(a), cupy.asarray(b)
    rows = [{"op": "gemm", "name": "cublas_dgemm", "m": m, "n": m, "k": k, "batch": 1,
             "rel_error": normwise(cupy.matmul(ga, gb).get(), exact), "reference": "exact"}]
    for name in schemes:
        c = sp.matmul(ga, gb, dtype=name).get()
        ratio = float((np.abs(c - exact) / gemm_bound(a, b, name)).max())
        assert ratio <= 1, f"{name} exceeds its bound: max error/bound = {ratio!r}"
        rows.append({"op": "gemm", "name": name, "m": m, "n": m, "k": k, "batch": 1,
                     "rel_error": normwise(c, exact), "reference": "exact", "bound_ratio": ratio})
        print(f"accuracy: {name} error {rows[-1]['rel_error']:.2e} (DGEMM {rows[0]['rel_error']:.2e}), "
              f"max error/bound {ratio:.3g}", flush=True)
    return rows


def stages(a, b, d, reps):
    """Milliseconds of the engine's stages (residues of A, of B incl. its transpose, GEMMs, CRT)."""
    words = cupy.zeros(1 + max(a.shape[0], b.shape[1]), np.uint32)    # the NaN/inf flag, then row flags
    batch = 1
    bits_a, bits_b = d.bits
    res_a = lambda: cuda_ozaki._residues(a[None], d, bits_a, (words, 0, 1))                      # noqa: E731
    res_b = lambda: cuda_ozaki._residues(cupy.ascontiguousarray(b.T)[None], d, bits_b, (words, 0, 1))  # noqa: E731
    (pa, ea), (pb, eb) = res_a(), res_b()
    prod = cuda_ozaki._products(pa, pb, batch, d)
    return {"residues_a": time_ms(res_a, reps), "residues_b": time_ms(res_b, reps),
            "int8_gemms": time_ms(lambda: cuda_ozaki._products(pa, pb, batch, d, batched=True), reps),
            "int8_gemms_each": time_ms(lambda: cuda_ozaki._products(pa, pb, batch, d, batched=False), reps),
            "crt": time_ms(lambda: cuda_ozaki._crt(prod, ea, eb, batch, b.shape[1], d), reps)}


def run_size(n, schemes, reps):
    rng = cupy.random.default_rng(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    flops = 2.0 * n ** 3
    dgemm = cupy.matmul(a, b)
    rows = [{"op": "gemm", "name": "cublas_dgemm", "m": n, "n": n, "k": n, "batch": 1,
             "tflops": flops / time_ms(lambda: cupy.matmul(a, b), reps) / 1e9, "rel_error": 0.0}]
    for name in schemes:
        ms = time_ms(lambda: sp.matmul(a, b, dtype=name), reps)
        diff = float(cupy.linalg.norm(sp.matmul(a, b, dtype=name) - dgemm) / cupy.linalg.norm(dgemm))
        rows.append({"op": "gemm", "name": name, "m": n, "n": n, "k": n, "batch": 1,
                     "tflops": flops / ms / 1e9, "rel_error": diff, "reference": "cublas_dgemm"})
        if n == 8192:
            rows[-1]["stages_ms"] = stages(a, b, sp.dtype(name), reps)
        print(f"n={n} {name}: {rows[-1]['tflops']:.1f} TFLOP/s (DGEMM {rows[0]['tflops']:.1f}), "
              f"vs DGEMM {diff:.2e} {rows[-1].get('stages_ms', '')}", flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
        if name == STRIDED_SCHEME:
            rows.append(strided_batch_row(a, b, name, flops, dgemm, reps))
    return rows


def strided_batch_row(a, b, name, flops, dgemm, reps):
    """The same scheme with its GEMMs as one strided batch instead of one cublasGemmEx per modulus."""
    default, cuda_ozaki.BATCHED_GEMMS = cuda_ozaki.BATCHED_GEMMS, True
    try:
        ms = time_ms(lambda: sp.matmul(a, b, dtype=name), reps)
        diff = float(cupy.linalg.norm(sp.matmul(a, b, dtype=name) - dgemm) / cupy.linalg.norm(dgemm))
    finally:
        cuda_ozaki.BATCHED_GEMMS = default
    n = a.shape[0]
    print(f"n={n} {name} (strided batch): {flops / ms / 1e9:.1f} TFLOP/s", flush=True)
    return {"op": "gemm", "name": f"{name}_strided_batch", "m": n, "n": n, "k": n, "batch": 1,
            "tflops": flops / ms / 1e9, "rel_error": diff, "reference": "cublas_dgemm"}


def table(results):
    lines = ["| n | name | TFLOP/s | x DGEMM | rel. error |", "|---|---|---|---|---|"]
    dgemm = {r["n"]: r["tflops"] for r in results if r["name"] == "cublas_dgemm" and "tflops" in r}
    for r in results:
        x = f"{r['tflops'] / dgemm[r['n']]:.2f}" if "tflops" in r else "—"
        tf = f"{r['tflops']:.1f}" if "tflops" in r else "—"
        case = str(r["n"]) if "tflops" in r else f"{r['n']} (k = {r['k']}, vs exact)"
        lines.append(f"| {case} | {r['name']} | {tf} | {x} | {r['rel_error']:.1e} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--schemes", nargs="*", default=list(SCHEMES))
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    results = check_accuracy(args.schemes)
    for n in args.sizes:
        results += run_size(n, args.schemes, args.reps)
    head = header()
    out = pathlib.Path(args.out) / f"gemm-fp64-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(f"wrote {out}")
    print(table(results))


if __name__ == "__main__":
    sys.exit(main())
