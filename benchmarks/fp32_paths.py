"""precision="fp32"'s SGEMM path on the GPU, per shape: cuBLAS SGEMM bare, with its fix-up pass
after it, and with the fix-up overlapped in 2, 4 and 8 chunks (``gemm_fp32.SgemmChecked``), beside
the public ``sp.matmul(..., precision="fp32")``.

First checks the overlapped path (asserted): every chunk count on odd shapes, broadcast batches and
special values, within SGEMM's bound and with the float64 product's NaN/inf exactly. Then times each
row by CUDA events behind a spin kernel (device time, ``gemm.device_us``) and per call in a loop
(``wall_us``). Writes ``benchmarks/results/fp32-paths-<date>-<sha>.json``; prints a table last.
Usage: ``python3 benchmarks/fp32_paths.py [--out DIR] [--shapes m,n,k,batch ...]``.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import cupy

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gemm as bench  # noqa: E402  (device_us, header)
from gemm_shapes import SHAPES, operands, wall_us  # noqa: E402
import splitprec as sp  # noqa: E402
from splitprec.engines.cuda import gemm_fp32  # noqa: E402


def assert_fp32(c, a, b, tag):
    """``c`` is the float64 product of ``a``, ``b`` (numpy, batched) within SGEMM's bound, with its
    NaN/inf exactly."""
    u = 2.0 ** -24
    k = a.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):
        exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
        ref = exact.astype(np.float32)
        bound = (2 * k + 2) * u * np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))) \
            + 2 * k * 2.0 ** -126
    finite = np.isfinite(ref)
    assert np.array_equal(np.isnan(c), np.isnan(ref)), (tag, "NaN pattern")
    assert np.array_equal(np.isinf(c), np.isinf(ref)) and np.array_equal(c[np.isinf(c)], ref[np.isinf(c)]), \
        (tag, "inf pattern")
    err = np.abs(c[finite].astype(np.float64) - exact[finite])
    assert (err <= bound[finite]).all(), (tag, float((err / bound[finite]).max()))


def special(a, b):
    """A NaN, an inf and a row times a column that reaches the top of float32's range, in place."""
    k = a.shape[-1]
    a[0, 1, k // 2] = np.inf
    b[-1, k // 3, 2] = np.nan
    a[0, 3, :] *= np.float32(2.0 ** 120)
    b[-1, :, 4] *= np.float32(2.0 ** 7)


def check_overlapped():
    """The overlapped cuBLAS path, every chunk count, on odd shapes, broadcast batches and special values."""
    rng = np.random.default_rng(2)
    for m, n, k, batch_a, batch_b in [(33, 65, 129, 5, 5), (300, 70, 64, 1, 1), (16, 24, 40, 1, 9)]:
        a = rng.standard_normal((batch_a, m, k)).astype(np.float32)
        b = rng.standard_normal((batch_b, k, n)).astype(np.float32)
        special(a, b)
        da, db = cupy.asarray(a), cupy.asarray(b)
        batch = max(batch_a, batch_b)
        for chunks in (1, 2, 3, 4, 8):
            c = cupy.full((batch, m, n), np.float32(7), np.float32)
            gemm_fp32.SgemmChecked(m, n, k, batch, batch_a > 1, batch_b > 1, chunks)(da.data.ptr, db.data.ptr, c.data.ptr)
            assert_fp32(cupy.asnumpy(c), a, b, ("overlapped", m, n, k, batch, chunks))
    print("overlapped ok", flush=True)


def run_shape(m, n, k, batch, reps, rng):
    a, b = operands(m, n, k, batch, rng)
    a3, b3 = (a, b) if batch > 1 else (a[None], b[None])
    ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
    c = cupy.empty((batch, m, n), np.float32)
    rows = [("cublas_sgemm", lambda: cupy.matmul(a, b)),
            ("precision_fp32", lambda: sp.matmul(a, b, precision="fp32"))]
    for chunks in (1, 2, 4, 8):
        run = gemm_fp32.SgemmChecked(m, n, k, batch, batch > 1, batch > 1, chunks)
        rows.append((f"sgemm_fixup_c{chunks}", lambda run=run: run(a3.data.ptr, b3.data.ptr, c.data.ptr) or c))
    records = []
    for name, call in rows:
        out = call()
        error = bench.rel_error(out.reshape(ref.shape), ref)
        us = bench.device_us(call, reps)
        record = {"m": m, "n": n, "k": k, "batch": batch, "name": name, "device_us": us,
                  "wall_us": wall_us(call), "rel_error": error}
        records.append(record)
        print(f"{m}x{n}x{k}x{batch} {name:22s} {us:9.1f} us  wall {record['wall_us']:8.1f} us  err {error:.2e}",
              flush=True)
    return records


def table(records):
    lines = ["| m x n x k x batch | SGEMM us | precision_fp32 | SGEMM + fix-up in 1 / 2 / 4 / 8 chunks (x SGEMM) |",
             "|---|---|---|---|"]
    shapes = sorted({(r["m"], r["n"], r["k"], r["batch"]) for r in records}, key=lambda s: s[0] * s[1] * s[2] * s[3])
    for shape in shapes:
        rows = {r["name"]: r for r in records if (r["m"], r["n"], r["k"], r["batch"]) == shape}
        base = rows["cublas_sgemm"]["device_us"]
        lines.append(f"| {' x '.join(map(str, shape))} | {base:.1f} | {base / rows['precision_fp32']['device_us']:.2f} | "
                     + " / ".join(f"{base / rows[f'sgemm_fixup_c{c}']['device_us']:.2f}" for c in (1, 2, 4, 8)) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "results"))
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--shapes", nargs="*", default=None, help="m,n,k,batch each")
    args = parser.parse_args(argv)
    shapes = [tuple(map(int, s.split(","))) for s in args.shapes] if args.shapes else \
        [s for s in SHAPES if s[0] * s[1] * s[2] * s[3] <= 2 ** 33]
    check_overlapped()
    head = bench.header()
    out = pathlib.Path(args.out) / f"fp32-paths-{head['date'][:10]}-{head['git_sha']}.json"
    rng = np.random.default_rng(0)
    records = []
    for shape in shapes:
        records += run_shape(*shape, args.reps, rng)
        out.write_text(json.dumps({**head, "results": records}, indent=1))
    print(table(records))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
