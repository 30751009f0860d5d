"""GEMM benchmark on the GPU: every scheme (wgmma, mma.sync and cuBLAS-composed engines) beside anchors.

Checks accuracy first (every scheme within ``accuracy.bounds.gemm_bound(..., engine="gpu")`` of the
exact product), then times each case with CUDA events (half a second of warm-up per row, then the
median of ``--reps``; the targets' case, 8192^3, in ``--rounds`` interleaved rounds, the median of
its rounds) on N(0,1) data, measures the normwise error against a float64 product, and
writes ``benchmarks/results/gemm-<date>-<sha>.json``. TFLOP/s = 2*m*n*k*batch / time. Anchors:
cuBLAS SGEMM / TF32 / BF16 / DGEMM (cupy's cuBLAS bindings) and XLA's DotAlgorithmPreset X3/X6/X9
when jax imports. Rows: ``<scheme>`` is the public ``sp.matmul`` (engine "auto"), ``<scheme>_sm90``
the wgmma kernel, ``<scheme>_sm80`` the mma.sync kernel (its tile as "auto" picks it) and
``<scheme>_cublas`` the cuBLAS engine (the three skipped above 8192^3 of work, for device time).
Usage: ``PYTHONPATH=. python3 benchmarks/gemm.py [--quick] [--out DIR]``.
"""
import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import cupy  # noqa: E402

import splitprec as sp  # noqa: E402
from splitprec.accuracy.bounds import gemm_bound  # noqa: E402
from splitprec.accuracy.reference import exact_matmul  # noqa: E402
from splitprec.engines.cuda import gemm as cuda_gemm, gemm_sm80, gemm_sm90, launch  # noqa: E402

SCHEMES = sp.dtypes("float32")
CASES = [(2048, 2048, 2048, 1), (4096, 4096, 4096, 1), (8192, 8192, 8192, 1), (16384, 16384, 16384, 1),
         (8192, 8192, 1024, 1), (128, 8192, 8192, 1), (64, 64, 64, 4096)]
TARGET_CASE = (8192, 8192, 8192, 1)
QUICK_CASES = [(2048, 2048, 2048, 1), (8192, 8192, 8192, 1), (64, 64, 64, 4096)]
CANDIDATE_TILES = [gemm_sm80.Tile(4, 2, 4, 2), gemm_sm80.Tile(4, 2, 4, 3), gemm_sm80.Tile(2, 4, 2, 2), gemm_sm80.Tile(2, 4, 2, 3),
                   gemm_sm80.Tile(4, 2, 2, 3), gemm_sm80.Tile(2, 2, 4, 4)]
XLA_PRESETS = {"tf32x3": "TF32_TF32_F32_X3", "bf16x3": "BF16_BF16_F32_X3", "bf16x6": "BF16_BF16_F32_X6",
               "bf16x9": "BF16_BF16_F32_X9", "tf32": "TF32_TF32_F32", "bf16": "BF16_BF16_F32"}
OTHER_ENGINES_MAX_WORK = 2 * 8192 ** 3   # sm90 and cublas rows are skipped on larger cases


def check_accuracy():
    """Every scheme, both engines, within the GPU bound on a small odd-shaped case (asserted)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((193, 700)).astype(np.float32)
    b = rng.standard_normal((700, 157)).astype(np.float32)
    exact = exact_matmul(a, b)
    for name in SCHEMES:
        bound = gemm_bound(a, b, name, engine="gpu")
        for engine in ("sm90", "sm80", "cublas"):
            c = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype(name), engine=engine))
            ratio = float((np.abs(c - exact) / bound).max())
            assert ratio <= 1, f"{name} ({engine}) exceeds its GPU bound: max error/bound = {ratio!r}"
            print(f"accuracy ok: {name:7s} {engine:9s} max error/bound {ratio:.3g}", flush=True)


SETTLE_SECONDS = 0.5     # warm-up per timed row: the H200 runs tensor-core work at its power limit,
                         # and its clock follows what ran before (a row timed right after a lighter
                         # one measured up to ~10% faster than in steady state)


def time_ms(fn, reps, warmup=2):
    """Median milliseconds of ``fn`` over ``reps`` runs, CUDA events around each, after at least
    ``warmup`` calls and ``SETTLE_SECONDS`` of them (steady state)."""
    start = time.perf_counter()
    calls = 0
    while calls < warmup or time.perf_counter() - start < SETTLE_SECONDS:
        fn()
        cupy.cuda.get_current_stream().synchronize()
        calls += 1
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


_SPIN = None


def _spin(microseconds):
    """Keep the stream busy for about ``microseconds`` (one thread reading the global timer)."""
    global _SPIN
    if _SPIN is None:
        _SPIN = cupy.RawKernel(r"""extern "C" __global__ void spin(unsigned long long ns) {
            unsigned long long t0, t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
        }""", "spin")
    _SPIN((1,), (1,), (np.uint64(microseconds * 1000),))


def device_us(fn, reps, spin_us=300):
    """Median device microseconds of one call of ``fn`` over ``reps`` runs, after ``SETTLE_SECONDS``
    of calls: each run is queued behind a ``spin_us`` spin kernel, so that its events time the GPU's
    work and not the host's gaps between the call's launches (a call costing the host less than
    ``spin_us``; ``wall_us`` beside it times the host)."""
    time_ms(fn, 1)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        _spin(spin_us)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times))


def rel_error(c, ref):
    return float(cupy.linalg.norm(c.astype(np.float64) - ref) / cupy.linalg.norm(ref))


def cublas_gemm_ex(a, b, dtype_code, compute):
    """``a @ b`` (batch 1) by cublasGemmEx on raw storage (float32 or bf16 bits as uint16)."""
    from cupy_backends.cuda.libs import cublas
    m, k = a.shape
    n = b.shape[1]
    c = cupy.empty((m, n), np.float32)
    alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
    cublas.gemmEx(cupy.cuda.device.get_cublas_handle(), 0, 0, n, m, k, alpha.ctypes.data,
                  b.data.ptr, dtype_code, n, a.data.ptr, dtype_code, k, beta.ctypes.data,
                  c.data.ptr, 0, n, compute, -1)
    return c


def to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bf16 bits (uint16)."""
    u = x.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def anchors(a, b, ref, reps):
    """(name, timer, rel_error) of cuBLAS SGEMM, TF32, BF16 and DGEMM on one case; ``timer()`` gives
    milliseconds."""
    rows = [("cublas_sgemm", lambda: cupy.matmul(a, b), rel_error(cupy.matmul(a, b), ref))]
    if a.ndim == 2:
        tf32 = lambda: cublas_gemm_ex(a, b, 0, 77)          # noqa: E731  COMPUTE_32F_FAST_TF32
        ab, bb = to_bf16_bits(a), to_bf16_bits(b)
        bf16 = lambda: cublas_gemm_ex(ab, bb, 14, 68)       # noqa: E731  CUDA_R_16BF, COMPUTE_32F
        rows += [("cublas_tf32", tf32, rel_error(tf32(), ref)), ("cublas_bf16", bf16, rel_error(bf16(), ref))]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    rows.append(("cublas_dgemm", lambda: cupy.matmul(a64, b64), 0.0))
    return [(name, lambda run=run: time_ms(run, reps), err) for name, run, err in rows]


def xla_anchors(a, b, ref, reps, schemes):
    """(name, timer, rel_error) of XLA's DotAlgorithmPreset of each scheme (host timer around
    block_until_ready: jax exposes no CUDA events), or [] when jax does not import."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception as err:      # jax is optional
        print(f"xla anchors skipped: {err!r}", flush=True)
        return []
    aj, bj = jnp.asarray(cupy.asnumpy(a)), jnp.asarray(cupy.asnumpy(b))

    def timer(f):
        settle = time.perf_counter()
        while time.perf_counter() - settle < SETTLE_SECONDS:
            f(aj, bj).block_until_ready()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f(aj, bj).block_until_ready()
            times.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(times))

    rows = []
    for name in schemes:
        preset = getattr(jax.lax.DotAlgorithmPreset, XLA_PRESETS[name])
        f = jax.jit(lambda x, y, p=preset: jnp.matmul(x, y, precision=p, preferred_element_type=jnp.float32))
        c = f(aj, bj).block_until_ready()
        rows.append((f"xla_{XLA_PRESETS[name]}", lambda f=f: timer(f), rel_error(cupy.asarray(np.asarray(c)), ref)))
    return rows


def best_tiles(reps):
    """Per scheme, the fastest tile of CANDIDATE_TILES on the 8192^3 case (engine time)."""
    a, b = (cupy.random.standard_normal((8192, 8192), dtype=np.float32) for _ in range(2))
    chosen = {}
    for name in SCHEMES:
        times = {t: time_ms(lambda: cuda_gemm.matmul(a, b, sp.dtype(name), engine="sm80", tile=t), reps)
                 for t in CANDIDATE_TILES if gemm_sm80.fits(sp.dtype(name), t)}
        chosen[name] = min(times, key=times.get)
        print(f"tiles {name}: " + ", ".join(f"{t.mt}/{t.warps_m}x{t.warps_n}x{t.stages} {ms:.2f} ms"
                                            for t, ms in times.items()), flush=True)
    return chosen


def run_case(m, n, k, batch, reps, tiles, with_xla, rounds=1):
    """Records of every row of one case. With ``rounds`` > 1 every row is timed once per round,
    rounds walking the rows forward and backward in turn (so no row always follows the same one),
    and a row's time is the median of its rounds."""
    shape_a, shape_b = ((batch,) if batch > 1 else ()) + (m, k), ((batch,) if batch > 1 else ()) + (k, n)
    a = cupy.random.standard_normal(shape_a, dtype=np.float32)
    b = cupy.random.standard_normal(shape_b, dtype=np.float32)
    ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
    flops = 2.0 * m * n * k * batch
    rows = anchors(a, b, ref, reps)
    for name in SCHEMES:
        d = sp.dtype(name)
        cuda_gemm.TILES[name] = tiles.get(name, cuda_gemm.DEFAULT_TILE)
        public = lambda d=d: sp.matmul(a, b, dtype=d)   # noqa: E731
        rows.append((name, lambda run=public: time_ms(run, reps), rel_error(public(), ref)))
        for engine in ("sm90", "sm80", "cublas") if flops <= OTHER_ENGINES_MAX_WORK else ():
            other = lambda d=d, engine=engine: cuda_gemm.matmul(a, b, d, engine=engine)   # noqa: E731
            rows.append((f"{name}_{engine}", lambda run=other: time_ms(run, reps), rel_error(other(), ref)))
    if with_xla and batch == 1 and m == n == k and m in (4096, 8192):
        rows += xla_anchors(a, b, ref, reps, [s for s in SCHEMES if s in XLA_PRESETS])
    times = {name: [] for name, _, _ in rows}
    for r in range(rounds):
        for name, timer, _ in (rows if r % 2 == 0 else rows[::-1]):
            times[name].append(timer())
    records = []
    for name, _, err in rows:
        record = {"op": "gemm", "name": name, "m": m, "n": n, "k": k, "batch": batch,
                  "tflops": round(flops / float(np.median(times[name])) / 1e9, 2), "rel_error": err,
                  "ms": round(float(np.median(times[name])), 4)}
        if rounds > 1:
            record["tflops_rounds"] = [round(flops / ms / 1e9, 2) for ms in times[name]]
        records.append(record)
    for r in records:
        spread = " (rounds " + ", ".join(f"{v:.1f}" for v in r["tflops_rounds"]) + ")" if rounds > 1 else ""
        print(f"{m}x{n}x{k}x{batch} {r['name']:28s} {r['tflops']:9.1f} TFLOP/s  err {r['rel_error']:.2e}{spread}",
              flush=True)
    return records


def write_cubins(directory):
    """Compile each scheme's GEMM instantiations (wgmma and mma.sync) to cubins, for cuobjdump."""
    from cuda.bindings import nvrtc
    capability = cupy.cuda.Device().compute_capability
    for name in SCHEMES:
        d = sp.dtype(name)
        kernels = [(gemm_sm80.GEMM_FILE, gemm_sm80.gemm_expression(d, cuda_gemm.TILES.get(name, cuda_gemm.DEFAULT_TILE)))]
        if capability == "90":
            kernels.append((gemm_sm90.GEMM90_FILE, gemm_sm90.gemm90_expression(d)))
        for filename, expression in kernels:
            _, prog = nvrtc.nvrtcCreateProgram(launch.source(filename).encode(), b"gemm.cu", 0, [], [])
            nvrtc.nvrtcAddNameExpression(prog, expression.encode())
            options = [launch.arch_option(capability).encode(), *(o.encode() for o in launch.OPTIONS)]
            assert nvrtc.nvrtcCompileProgram(prog, len(options), options)[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * size
            nvrtc.nvrtcGetCUBIN(prog, cubin)
            pathlib.Path(directory, f"{filename[:-3]}_{name}.cubin").write_bytes(cubin)


def header():
    rt = cupy.cuda.runtime
    sha = os.environ.get("SPLITPREC_GIT_SHA") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return {"device": rt.getDeviceProperties(0)["name"].decode(), "driver": smi or rt.driverGetVersion(),
            "cuda": rt.runtimeGetVersion(), "cupy": cupy.__version__, "git_sha": sha,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def table(results):
    """Markdown table: per case, every row with TFLOP/s, ratio to SGEMM of that case, error."""
    lines = ["| case (m x n x k x batch) | name | TFLOP/s | x SGEMM | rel. error |", "|---|---|---|---|---|"]
    sgemm = {(r["m"], r["n"], r["k"], r["batch"]): r["tflops"] for r in results if r["name"] == "cublas_sgemm"}
    for r in results:
        case = (r["m"], r["n"], r["k"], r["batch"])
        lines.append(f"| {'x'.join(map(str, case))} | {r['name']} | {r['tflops']:.1f} | "
                     f"{r['tflops'] / sgemm[case]:.2f} | {r['rel_error']:.1e} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="cases 2048^3, 8192^3 and the batch only")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the 8192^3 case (the targets')")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    parser.add_argument("--no-xla", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="time every candidate tile first")
    parser.add_argument("--cubins", help="also write each scheme's GEMM cubin into this directory")
    args = parser.parse_args(argv)
    check_accuracy()
    tiles = best_tiles(args.reps) if args.sweep else dict(cuda_gemm.TILES)
    head = header()
    results = []
    for case in (QUICK_CASES if args.quick else CASES):
        results += run_case(*case, args.reps, tiles, not args.no_xla, args.rounds if case == TARGET_CASE else 1)
    head["tiles"] = {name: [t.mt, t.warps_m, t.warps_n, t.stages] for name, t in tiles.items()}
    out = pathlib.Path(args.out) / f"gemm-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(f"wrote {out}")
    if args.cubins:
        write_cubins(args.cubins)
    print(table([r for r in results if r["m"] == r["n"] == r["k"] == 8192 or r["batch"] > 1]))


if __name__ == "__main__":
    sys.exit(main())
