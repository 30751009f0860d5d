"""fp64 GEMM benchmark on the GPU: ``precision="fp64"`` and every ``ozaki2_int8x<N>`` beside cuBLAS.

For each n in ``SIZES`` (m = n = k) and each input family (N(0,1), and GEMMul8's ``(U(0,1) - 0.5)
exp(phi N(0,1))`` for phi in ``PHIS``; records carry ``"inputs"`` and ``"phi"``) it times, in the
same run: ``cublas_dgemm`` (``cupy.matmul`` of float64), ``cublas_fp64_emulation`` (cublasGemmEx
with ``CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT`` on its own handle, emulation strategy EAGER; the row
is left out, with the reason printed, where this cuBLAS lacks it), ``precision_fp64``
(``sp.matmul(a, b, precision="fp64")``) and each fixed scheme: half a second of warm-up per row, then
the median of ``--reps`` (CUDA events). TFLOP/s = 2 m n k / time. Error: against the exact product
(``accuracy.exact_matmul``) of ``SAMPLE`` rows by ``SAMPLE`` columns of the output, normwise over
that sample, and the largest error / bound there: the scheme's ``accuracy.gemm_bound`` for the fixed
schemes, DGEMM's worst-case bound ``(gamma_k + u)|A||B| + (k + 1) 2**-1074`` (to the correctly
rounded product) for the others; asserted <= 1 for splitprec's rows and DGEMM's. With N(0,1) inputs
at n = 8192 the stages of each fixed scheme (residues, int8 GEMMs, CRT) are timed too.
Writes ``benchmarks/results/gemm-fp64-<date>-<sha>.json``.
Usage: ``PYTHONPATH=. python3 benchmarks/gemm_fp64.py [--reps 10] [--sizes ...] [--phis ...] [--out DIR]``.
"""
import argparse
import ctypes
import glob
import json
import os
import pathlib
import site
import sys

import numpy as np
import cupy

import splitprec as sp
from splitprec.accuracy import exact_matmul, gemm_bound
from splitprec.engines.cuda import ozaki as cuda_ozaki
from splitprec.ozaki_plan import gamma

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from gemm import header, time_ms  # noqa: E402

SIZES = (2048, 4096, 8192, 16384)
PHIS = (1, 4, 16)
FIXED = [name for name in sp.dtypes("float64") if name != "ozaki2_int8_adaptive"]
SAMPLE = 16                            # sampled rows and columns of each output
STAGES_AT = 8192
_CUDA_R_64F, _COMPUTE_64F_EMULATED_FIXEDPOINT, _EMULATION_STRATEGY_EAGER = 1, 79, 2
U = 2.0 ** -53
TINY = 2.0 ** -1074


def operands(xp, seed, n, phi):
    """float64 ``(a, b)``, n x n, of numpy or cupy ``xp``: N(0,1) for ``phi=None``, else GEMMul8's
    ``(U(0,1) - 0.5) exp(phi N(0,1))`` (``accuracy.cases.exponent_span``'s family)."""
    rng = xp.random.default_rng(seed)
    if phi is None:
        return rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return tuple((rng.random((n, n)) - 0.5) * xp.exp(phi * rng.standard_normal((n, n))) for _ in range(2))


def dgemm_bound(a, b):
    """DGEMM's worst-case bound to the correctly rounded product: ``(gamma_k + u)|A||B| + (k + 1)
    2**-1074`` (numpy), inflated for its own float64 evaluation."""
    k = a.shape[-1]
    return (gamma(k) + U) * (np.abs(a) @ np.abs(b)) * (1 + (k + 8) * 2.0 ** -52) + (k + 1) * TINY


def sampled_error(a, b, c, rows, cols, scheme=None):
    """``(normwise error, max error / bound)`` of ``c`` on the entries ``rows`` x ``cols``
    (numpy index arrays) against the exact product; ``a``, ``b``, ``c`` numpy or cupy. The bound:
    ``gemm_bound(..., scheme)`` of the sampled rows and columns for a fixed-count scheme (whose
    bound of an entry depends only on its row and column), DGEMM's worst case otherwise."""
    host = lambda x: cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else np.asarray(x)   # noqa: E731
    x, y = host(a[rows]), host(b[:, cols])
    got = host(c[rows][:, cols])
    exact = exact_matmul(x, y)
    bound = gemm_bound(x, y, scheme) if scheme in FIXED else dgemm_bound(x, y)
    error = np.abs(got - exact)
    return float(np.linalg.norm(got - exact) / np.linalg.norm(exact)), float((error / bound).max())


def _load_cublas():
    """The libcublas that cupy loaded (same process), by soname or from the pip wheel's folder."""
    import cupy_backends.cuda.libs.cublas  # noqa: F401  (cupy loads libcublas here)
    names = ["libcublas.so.13", "libcublas.so.12"] + sorted(glob.glob(
        os.path.join(site.getsitepackages()[0], "nvidia", "cu1*", "lib", "libcublas.so*")))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("libcublas not found")


def cublas_emulation():
    """``(run, None)``: ``run(a, b)`` is ``a @ b`` by cuBLAS's fixed-point fp64 emulation
    (cublasGemmEx, CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, strategy EAGER, its own handle on the
    current stream); or ``(None, reason)`` where this cuBLAS does not provide it."""
    try:
        lib = _load_cublas()
        handle = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(handle)):
            return None, "cublasCreate failed"
        status = lib.cublasSetEmulationStrategy(handle, _EMULATION_STRATEGY_EAGER)
    except (ImportError, OSError, AttributeError) as err:
        return None, f"no cublasSetEmulationStrategy ({type(err).__name__}: {err})"
    if status:
        return None, f"cublasSetEmulationStrategy returned status {status}"
    one, zero = ctypes.c_double(1.0), ctypes.c_double(0.0)

    def run(a, b):
        m, k = a.shape
        n = b.shape[1]
        c = cupy.empty((m, n), np.float64)
        lib.cublasSetStream_v2(handle, ctypes.c_void_p(cupy.cuda.get_current_stream().ptr))
        status = lib.cublasGemmEx(handle, 0, 0, n, m, k, ctypes.byref(one), ctypes.c_void_p(b.data.ptr),
                                  _CUDA_R_64F, n, ctypes.c_void_p(a.data.ptr), _CUDA_R_64F, k, ctypes.byref(zero),
                                  ctypes.c_void_p(c.data.ptr), _CUDA_R_64F, n, _COMPUTE_64F_EMULATED_FIXEDPOINT, -1)
        if status:
            raise RuntimeError(f"cublasGemmEx (fp64 emulation) returned status {status}")
        return c

    try:
        run(cupy.ones((64, 64)), cupy.ones((64, 64)))
    except RuntimeError as err:
        return None, str(err)
    return run, None


def stages(a, b, d, reps):
    """Milliseconds of the engine's stages (residues of A, of B incl. its transpose, GEMMs, CRT)."""
    words = cupy.zeros(1 + max(a.shape[0], b.shape[1]), np.uint32)    # the NaN/inf flag, then row flags
    bits_a, bits_b = d.bits
    res_a = lambda: cuda_ozaki._residues(a[None], d, bits_a, (words, 0, 1))                      # noqa: E731
    res_b = lambda: cuda_ozaki._residues(cupy.ascontiguousarray(b.T)[None], d, bits_b, (words, 0, 1))  # noqa: E731
    (pa, ea), (pb, eb) = res_a(), res_b()
    prod = cuda_ozaki._products(pa, pb, 1, d)
    return {"residues_a": time_ms(res_a, reps), "residues_b": time_ms(res_b, reps),
            "int8_gemms": time_ms(lambda: cuda_ozaki._products(pa, pb, 1, d), reps),
            "crt": time_ms(lambda: cuda_ozaki._crt(prod, ea, eb, 1, b.shape[1], d), reps)}


def rows_of(emulation):
    """``[(name, scheme or None, fn(a, b))]``: the rows timed on every input, anchors first."""
    rows = [("cublas_dgemm", None, cupy.matmul)]
    if emulation is not None:
        rows.append(("cublas_fp64_emulation", None, emulation))
    rows.append(("precision_fp64", None, lambda a, b: sp.matmul(a, b, precision="fp64")))
    return rows + [(name, name, lambda a, b, name=name: sp.matmul(a, b, dtype=name)) for name in FIXED]


def run_inputs(n, phi, rows, reps):
    a, b = operands(cupy, n + (0 if phi is None else int(phi * 1000)), n, phi)
    picks = np.random.default_rng(n).choice(n, (2, SAMPLE), replace=False)
    out = []
    for name, scheme, fn in rows:
        ms = time_ms(lambda: fn(a, b), reps)
        normwise, ratio = sampled_error(a, b, fn(a, b), picks[0], picks[1], scheme)
        record = {"op": "gemm", "name": name, "m": n, "n": n, "k": n, "batch": 1,
                  "inputs": "normal" if phi is None else "span", "phi": phi, "tflops": 2.0 * n ** 3 / ms / 1e9,
                  "rel_error": normwise, "reference": f"exact, {SAMPLE}x{SAMPLE} sampled entries",
                  "bound_ratio": ratio, "bound": "gemm_bound" if scheme else "dgemm_worst_case"}
        if scheme and phi is None and n == STAGES_AT:
            record["stages_ms"] = stages(a, b, sp.dtype(scheme), reps)
        print(f"n={n} phi={phi} {name}: {record['tflops']:.1f} TFLOP/s, error {normwise:.2e}, "
              f"error/bound {ratio:.3g}", flush=True)
        assert name == "cublas_fp64_emulation" or ratio <= 1, f"{name} exceeds its bound: {ratio!r}"
        out.append(record)
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def table(results):
    """Markdown: one row per record, with the ratio to DGEMM's TFLOP/s and error on the same inputs."""
    lines = ["| n | inputs | name | TFLOP/s | x DGEMM | rel. error (sampled) | x DGEMM error |",
             "|---|---|---|---|---|---|---|"]
    key = lambda r: (r["n"], r["inputs"], r["phi"])                                            # noqa: E731
    dgemm = {key(r): r for r in results if r["name"] == "cublas_dgemm"}
    for r in results:
        base = dgemm.get(key(r))
        speed = f"{r['tflops'] / base['tflops']:.2f}" if base else "—"
        error = f"{r['rel_error'] / base['rel_error']:.2g}" if base and base["rel_error"] else "—"
        inputs = "N(0,1)" if r["phi"] is None else f"phi = {r['phi']:g}"
        lines.append(f"| {r['n']} | {inputs} | {r['name']} | {r['tflops']:.1f} | {speed} | "
                     f"{r['rel_error']:.1e} | {error} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--phis", nargs="*", type=float, default=list(PHIS))
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    emulation, reason = cublas_emulation()
    if emulation is None:
        print(f"cublas_fp64_emulation left out: {reason}", flush=True)
    rows, results = rows_of(emulation), []
    for n in args.sizes:
        for phi in [None] + args.phis:
            results += run_inputs(n, phi, rows, args.reps)
    head = header()
    out = pathlib.Path(args.out) / f"gemm-fp64-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "emulation": reason or "cublasGemmEx, COMPUTE_64F_EMULATED_FIXEDPOINT, EAGER",
                               "results": results}, indent=1))
    print(f"wrote {out}")
    print(table(results))


if __name__ == "__main__":
    sys.exit(main())
