"""Strong scaling of ``splitprec.matmul`` on Dask arrays: one and two CPU workers, one GPU worker.

CPU rows: an ``n x n x n`` product (default 2048, ``tf32x3``) in ``block``-sized chunks (default 1024)
on the reference engine, on a ``distributed.LocalCluster`` of 1 and of 2 worker processes with one
thread each (glibc's malloc thresholds raised in the workers: ``WORKER_ENVIRON``).
GPU rows, in one run: a 32768^2 ``fp16x3`` product of cupy chunks in 8192^2 blocks on one GPU worker
(dask-cuda's LocalCUDACluster when it imports, else a distributed worker process; one thread), the
same under the threaded scheduler in this process, the one-GPU ``sp.matmul`` of the same operands,
the Dask graph's own task functions on the same blocks queued in turn with no Dask (the ceiling of
any schedule), and Dask with cupy SGEMM chunks (``dask.array.matmul``) on the worker; then the parts
of one output block (a block product, the same with its operands' splits kept, the float64 sum of
the k-chunk partials in one kernel and as cupy's elementwise steps). Without a CUDA device they
are skipped and the JSON says why. Each Dask row checks accuracy first (``accuracy.check`` of the
dask operands: sampled entries within the chunked bound, asserted), then times ``persist`` of the
product of operands already persisted, until its blocks are computed and, on the GPU, the device
has finished (``cupy.cuda.Device().synchronize()`` on the worker: the tasks return once their
kernels are queued); ``worker_seconds``: from the first task's start to that synchronize, on the
worker. Median of ``--reps`` after one warm-up; the scheme's GPU rows one run each per round.
One-GPU ``sp.matmul``, the ceiling and the parts: CUDA events.
GFLOP/s = 2*n^3 / time. Writes ``benchmarks/results/dask-scaling-<date>-<sha>.json``.
Usage: ``PYTHONPATH=. python3 benchmarks/dask_scaling.py [--n 2048] [--block 1024] [--reps 3]
[--gpu-n 32768] [--gpu-block 8192] [--gpu-scheme fp16x3] [--only cpu|gpu] [--out DIR]``.
"""
import argparse
import collections
import contextlib
import datetime
import functools
import json
import logging
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import dask
import dask.array as da
import distributed
import numpy as np

from splitprec import accuracy
import splitprec as sp

GPU_CASE = {"n": 32768, "block": 8192, "scheme": "fp16x3"}
# Worker processes start with distributed's MALLOC_TRIM_THRESHOLD_=65536, which makes glibc map and
# unmap every large temporary: the reference engine's split then page-faults for half its time
# (one 1024^3 tf32x3 block: 3.6 s against 1.3 s). Both thresholds at 1 GiB keep its memory.
WORKER_ENVIRON = {"MALLOC_TRIM_THRESHOLD_": str(2 ** 30), "MALLOC_MMAP_THRESHOLD_": str(2 ** 30)}


def _normal_block(*, size, seed, on_gpu, block_id):
    """One block of N(0,1) float32 values, the same for a block index and seed on either device."""
    if on_gpu:
        import cupy
        return cupy.random.default_rng(seed * 1_000_003 + 1009 * block_id[0] + block_id[1]).standard_normal(
            size, dtype=np.float32)
    return np.random.default_rng((seed, *block_id)).standard_normal(size, dtype=np.float32)


def random_matrix(n, block, seed, on_gpu=False):
    """An ``n x n`` dask array of N(0,1) float32 in ``block``-sized chunks, generated where it lives."""
    if on_gpu:
        import cupy
        meta = cupy.empty((0, 0), np.float32)
    else:
        meta = np.empty((0, 0), np.float32)
    return da.map_blocks(_normal_block, size=(block, block), seed=seed, on_gpu=on_gpu,
                         chunks=((block,) * (n // block),) * 2, meta=meta)


def checked(a, b, scheme, engine):
    """The sampled accuracy of ``scheme`` on the dask operands, asserted within the chunked bound."""
    row = accuracy.check(a, b, [scheme], engine=engine).rows[0]
    assert row.ratio <= 1, f"{scheme} exceeds its chunked bound: max error/bound = {row.ratio!r}"
    return {"rel_error_sampled": row.normwise, "max_error_over_bound": row.ratio}


def _same(block, run):
    return block


def renamed(x, run):
    """``x`` under new task names (an identity per block): run ``run`` of a product must not find
    the previous run's result, of the same names, still in the workers' memory."""
    return x.map_blocks(_same, run=run, meta=x._meta)


def synchronize_device():
    """Wait for the calling process's GPU to finish the kernels queued on it."""
    import cupy
    cupy.cuda.Device().synchronize()


def synchronized_at():
    """``time.time()`` once the calling process's GPU has finished its queued kernels."""
    synchronize_device()
    return time.time()


def persisted_once(client, product, settle=None):
    """One persist of ``product`` on the cluster (``client``; None: the threaded scheduler here) until
    its blocks are computed and ``settle()`` has returned: the wall seconds, the seconds its tasks
    computed by kind, and, where ``settle`` returns the workers' clocks, the seconds from the first
    task's start to the last of them (the time on the workers)."""
    with distributed.get_task_stream(client) if client else contextlib.nullcontext() as stream:
        start = time.perf_counter()
        result = client.persist(product) if client else product.persist(scheduler="threads")
        if client:
            distributed.wait(result)
        settled = settle() if settle else None
        wall = time.perf_counter() - start
    kinds, on_workers = collections.Counter(), None
    if client:
        spans = [(dask.utils.key_split(task["key"]), s) for task in stream.data for s in task["startstops"]
                 if s["action"] == "compute"]
        for kind, span in spans:
            kinds[kind] += span["stop"] - span["start"]
        if isinstance(settled, dict):
            on_workers = max(settled.values()) - min(span["start"] for _, span in spans)
    del result
    return wall, kinds, on_workers


def timing_of(runs):
    """Median seconds and the timing fields of ``persisted_once`` results ``runs``."""
    timing = {"times": [wall for wall, _, _ in runs]}
    kinds = [k for _, k, _ in runs if k]
    if kinds:
        timing["task_seconds"] = statistics.median(sum(k.values()) for k in kinds)
        timing["task_seconds_by_kind"] = {kind: statistics.median(k[kind] for k in kinds) for kind in kinds[-1]}
    if all(on is not None for _, _, on in runs):
        timing["worker_seconds"] = statistics.median(on for _, _, on in runs)
    return statistics.median(timing["times"]), timing


def wall_seconds(client, make, reps, settle=None):
    """Median wall seconds of ``persisted_once(client, make(run), settle)`` after one warm-up run,
    with the times, the task seconds (summed over workers: equal for any number of workers unless
    the machine is shared) and the time on the workers where ``settle`` gives it."""
    return timing_of([persisted_once(client, make(run), settle) for run in range(reps + 1)][1:])


def row(name, n, seconds, timing, **fields):
    return {"name": name, "n": n, "seconds": seconds, **timing, "gflops": 2 * n ** 3 / seconds / 1e9, **fields}


def cpu_rows(n, block, scheme, reps):
    rows = []
    environ = {f"distributed.nanny.pre-spawn-environ.{name}": value for name, value in WORKER_ENVIRON.items()}
    for workers in (1, 2):
        with dask.config.set(environ), distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
                distributed.Client(cluster) as client:
            a, b = client.persist([random_matrix(n, block, 1), random_matrix(n, block, 2)])
            accuracy_fields = checked(a, b, scheme, "cpu")
            seconds, timing = wall_seconds(client, lambda run: sp.matmul(renamed(a, run), b, dtype=scheme), reps)
            rows.append(row(f"dask_{scheme}_cpu", n, seconds, timing, block=block, scheme=scheme,
                            workers=workers, threads_per_worker=1, **accuracy_fields))
            print(f"{workers} worker(s): {seconds:.3f} s ({rows[-1]['task_seconds']:.3f} s in tasks), "
                  f"{rows[-1]['gflops']:.2f} GFLOP/s", flush=True)
    rows[1]["speedup_over_one_worker"] = rows[0]["seconds"] / rows[1]["seconds"]
    return rows


def gpu_unavailable():
    """Why the GPU row cannot run here, or None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as error:                       # no cupy, no driver, no device
        return f"no usable CUDA device ({type(error).__name__}: {error})"
    return None


def gpu_cluster():
    """A one-worker, one-thread cluster owning GPU 0: dask-cuda's LocalCUDACluster where it imports,
    else a distributed worker process; and its name."""
    try:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                                silence_logs=logging.ERROR), "dask_cuda.LocalCUDACluster"
    except ImportError:
        return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                                        silence_logs=logging.ERROR), "distributed.LocalCluster"


def event_seconds(call, reps, warmup=0.5):
    """Median CUDA-event seconds of ``call()`` after ``warmup`` seconds of calls, and the times."""
    import cupy
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        call()
    synchronize_device()
    start, stop, times = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(reps):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times), {"times": times}


def gpu_parts(block, scheme, chunks, reps):
    """Microseconds of the parts of one output block of ``chunks`` k-chunks: one block product, the
    same of SplitArrays whose splits are kept, and the float64 sum of ``chunks`` partials in one
    kernel and as cupy's elementwise steps (formats.widen and narrow)."""
    import cupy
    from splitprec.engines.cuda.sums import float64_sum
    from splitprec.formats import narrow, widen
    a, b = (cupy.random.default_rng(seed).standard_normal((block, block), dtype=np.float32) for seed in (3, 4))
    kept = [sp.asarray(x, dtype=scheme) for x in (a, b)]
    partials = [sp.matmul(a, b, dtype=scheme) for _ in range(chunks)]

    def elementwise_sum():
        total = widen(partials[0])
        for partial in partials[1:]:
            total = total + widen(partial)
        return narrow(total)

    assert bool((elementwise_sum() == float64_sum(partials)).all())
    calls = {"block_product": lambda: sp.matmul(a, b, dtype=scheme),
             "block_product_splits_kept": lambda: sp.matmul(*kept),
             "float64_sum_kernel": lambda: float64_sum(partials),
             "float64_sum_elementwise": elementwise_sum}
    times = {name: event_seconds(call, reps)[0] * 1e6 for name, call in calls.items()}
    for name in ("block_product", "block_product_splits_kept", "float64_sum_kernel"):
        times[f"{name}_host"] = host_seconds(calls[name])[0] * 1e6     # close to the event time: it waits
    return times


def host_seconds(call, calls=10):
    """Host seconds per ``call()`` issued back to back with no wait, and the GPU seconds per call
    (the same calls ended by one synchronize): equal where a call waits for the device."""
    synchronize_device()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    issued = time.perf_counter()
    synchronize_device()
    return (issued - start) / calls, (time.perf_counter() - start) / calls


def blocks_in_turn(a_blocks, b_blocks, d):
    """The Dask product's work with no Dask: the layer's own task functions on the blocks (lists of
    rows of cupy blocks), queued from this thread in turn; the ceiling of any schedule."""
    from splitprec import dask as layer
    a_kept = [[layer._split_once(x, d=d) for x in row] for row in a_blocks]
    b_kept = [[layer._split_once(x, d=d) for x in row] for row in b_blocks]
    return [[layer._output_block(row, [b_row[j] for b_row in b_kept], d=d, split_array=False)
             for j in range(len(b_kept[0]))] for row in a_kept]


def gpu_rows(n, block, scheme, reps):
    """The GPU rows (module docstring). The scheme's rows are measured in rounds, one run of each
    per round (the first a warm-up), so that the board's clock, which drifts under its power cap,
    weighs on each alike."""
    import cupy
    d = sp.dtype(scheme)
    local = [random_matrix(n, block, seed, on_gpu=True).persist(scheduler="threads") for seed in (1, 2)]
    whole = [cupy.ascontiguousarray(x.compute(scheduler="threads")) for x in local]
    blocks = [[[x.blocks[i, j].compute(scheduler="sync") for j in range(x.numblocks[1])]
               for i in range(x.numblocks[0])] for x in local]
    cluster, kind = gpu_cluster()
    fields = {"block": block, "cluster": kind, "threads_per_worker": 1}
    with cluster, distributed.Client(cluster) as client:
        a, b = client.persist([random_matrix(n, block, 1, on_gpu=True), random_matrix(n, block, 2, on_gpu=True)])
        checks = checked(a, b, scheme, "gpu")
        settle = functools.partial(client.run, synchronized_at)
        seconds, timing = wall_seconds(client, lambda run: renamed(a, run) @ b, reps, settle)
        sgemm = row("dask_cupy_sgemm_gpu", n, seconds, timing, **fields)
        rounds = {"worker": [], "threads": [], "one_gpu": [], "ceiling": []}
        for run in range(reps + 1):
            rounds["worker"].append(persisted_once(client, sp.matmul(renamed(a, run), b, dtype=scheme), settle))
            rounds["threads"].append(persisted_once(None, sp.matmul(renamed(local[0], run), local[1], dtype=scheme),
                                                    synchronize_device))
            rounds["one_gpu"].append(event_seconds(lambda: sp.matmul(*whole, dtype=scheme), 1, warmup=0)[0])
            rounds["ceiling"].append(event_seconds(lambda: blocks_in_turn(*blocks, d), 1, warmup=0)[0])
    one_gpu = statistics.median(rounds["one_gpu"][1:])
    ceiling = statistics.median(rounds["ceiling"][1:])
    rows = [row(f"dask_{scheme}_gpu", n, *timing_of(rounds["worker"][1:]), scheme=scheme, **fields, **checks),
            sgemm,
            row(f"dask_{scheme}_gpu_threads", n, *timing_of(rounds["threads"][1:]), block=block, scheme=scheme,
                scheduler="threads"),
            row(f"one_gpu_{scheme}", n, one_gpu, {"times": rounds["one_gpu"][1:]}, scheme=scheme),
            row(f"blocks_in_turn_{scheme}", n, ceiling, {"times": rounds["ceiling"][1:]}, block=block, scheme=scheme)]
    for r in rows:
        r["x_one_gpu"] = one_gpu / r["seconds"]
        if r["name"].startswith("dask_") and r is not sgemm:
            r["x_dask_cupy_sgemm"] = sgemm["seconds"] / r["seconds"]
            r["x_blocks_in_turn"] = ceiling / r["seconds"]
            if "worker_seconds" in r:
                r["x_one_gpu_on_the_worker"] = one_gpu / r["worker_seconds"]
    del whole, blocks, local
    parts = gpu_parts(block, scheme, n // block, reps)
    rows.append({"name": f"parts_of_one_output_block_{scheme}", "block": block, "k_chunks": n // block,
                 "microseconds": parts})
    return rows


def cpu_name():
    info = pathlib.Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    return f"{names[0] if names else platform.processor()} ({os.cpu_count()} CPUs)"


def header():
    sha = os.environ.get("SPLITPREC_GIT_SHA") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
    versions = {"python": platform.python_version(), "numpy": np.__version__, "dask": dask.__version__,
                "distributed": distributed.__version__}
    head = {"device": cpu_name()}
    try:
        import cupy
        versions["cupy"] = cupy.__version__
        if cupy.cuda.is_available():
            head["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
            versions["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        import dask_cuda
        versions["dask_cuda"] = dask_cuda.__version__
    except ImportError:
        pass
    return {**head, "versions": versions, "git_sha": sha,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cpu_worker_environ": WORKER_ENVIRON,
            "load_average_at_start": os.getloadavg(),   # 1, 5, 15 minutes: other processes' share
            "command": " ".join(["python3", "benchmarks/dask_scaling.py", *sys.argv[1:]])}


def table(results):
    """The rows as printed lines: name, seconds, GFLOP/s and the ratios a row has."""
    lines = []
    for r in results:
        if "seconds" in r:
            ratios = "  ".join(f"{key} {r[key]:.2f}" for key in (
                "x_one_gpu", "x_one_gpu_on_the_worker", "x_blocks_in_turn", "x_dask_cupy_sgemm",
                "speedup_over_one_worker") if key in r)
            where = r["cluster"].split(".")[-1] if "cluster" in r else r.get("scheduler", "")
            lines.append(f"{r['name']:<26} {where:<18} {r['seconds']:8.4f} s {r['gflops']:10.1f} GFLOP/s  {ratios}")
            if "task_seconds_by_kind" in r:
                lines.append("    task seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in r["task_seconds_by_kind"].items()))
        else:
            lines.append(f"{r['name']}: " + ", ".join(f"{k} {v:.1f} us" for k, v in r["microseconds"].items()))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--block", type=int, default=1024)
    parser.add_argument("--scheme", default="tf32x3")
    parser.add_argument("--gpu-n", type=int, default=GPU_CASE["n"])
    parser.add_argument("--gpu-block", type=int, default=GPU_CASE["block"])
    parser.add_argument("--gpu-scheme", default=GPU_CASE["scheme"])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=("cpu", "gpu"), help="run the CPU rows or the GPU rows alone")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    head = header()
    results = cpu_rows(args.n, args.block, args.scheme, args.reps) if args.only != "gpu" else []
    reason = gpu_unavailable() if args.only != "cpu" else "not asked for (--only cpu)"
    if reason is None:
        results += gpu_rows(args.gpu_n, args.gpu_block, args.gpu_scheme, args.reps)
    head["gpu_row"] = "ran" if reason is None else f"skipped: {reason}"
    print(f"GPU rows: {head['gpu_row']}")
    out = pathlib.Path(args.out) / f"dask-scaling-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(table(results))
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
