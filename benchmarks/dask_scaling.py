"""Strong scaling of ``splitprec.matmul`` on Dask arrays: one and two CPU workers, one GPU worker.

CPU rows: an ``n x n x n`` product (default 2048, ``tf32x3``) in ``block``-sized chunks (default 1024)
on the reference engine, on a ``distributed.LocalCluster`` of 1 and of 2 worker processes with one
thread each (glibc's malloc thresholds raised in the workers: ``WORKER_ENVIRON``). GPU row (one
worker with cupy chunks, dask-cuda's LocalCUDACluster when it imports): a 32768^2 ``fp16x3`` product in 8192^2 blocks against the one-GPU ``sp.matmul`` of the same
product and against Dask with cupy SGEMM chunks (``dask.array.matmul``), in the same run; without
a CUDA device it is skipped and the JSON says why. Each row checks accuracy first
(``accuracy.check`` of the dask operands: sampled entries within the chunked bound, asserted), then
times ``persist`` + ``wait`` of the product of operands already persisted on the workers (median
of ``--reps`` after one warm-up; one-GPU ``sp.matmul``: CUDA events). GFLOP/s = 2*n^3 / time.
Writes ``benchmarks/results/dask-scaling-<date>-<sha>.json``.
Usage: ``PYTHONPATH=. python3 benchmarks/dask_scaling.py [--n 2048] [--block 1024] [--reps 3] [--out DIR]``.
"""
import argparse
import datetime
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


def wall_seconds(client, make, reps):
    """Median wall seconds of persisting ``make(run)`` on the cluster and waiting for it (after one
    warm-up run), the times, and the median over runs of the seconds its tasks computed (summed
    over workers: equal for any number of workers unless the machine is shared)."""
    times, task_seconds = [], []
    for run in range(reps + 1):
        product = make(run)
        with distributed.get_task_stream(client) as stream:
            start = time.perf_counter()
            result = client.persist(product)
            distributed.wait(result)
            times.append(time.perf_counter() - start)
        task_seconds.append(sum(s["stop"] - s["start"] for task in stream.data for s in task["startstops"]
                                if s["action"] == "compute"))
        del result
    return statistics.median(times[1:]), {"times": times[1:], "task_seconds": statistics.median(task_seconds[1:])}


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
    try:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(n_workers=1, threads_per_worker=1, dashboard_address=":0"), "dask_cuda.LocalCUDACluster"
    except ImportError:
        return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                        dashboard_address=":0"), "distributed.LocalCluster"


def one_gpu_seconds(n, block, scheme, reps):
    """Median CUDA-event seconds of one-GPU ``sp.matmul`` of the same operands (built in this process)."""
    import cupy
    a, b = (random_matrix(n, block, seed, on_gpu=True).compute(scheduler="sync") for seed in (1, 2))
    sp.matmul(a, b, dtype=scheme)
    start, stop, times = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(reps):
        start.record()
        sp.matmul(a, b, dtype=scheme)
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times), {"times": times}


def gpu_rows(reps):
    n, block, scheme = GPU_CASE["n"], GPU_CASE["block"], GPU_CASE["scheme"]
    cluster, kind = gpu_cluster()
    rows = []
    with cluster, distributed.Client(cluster) as client:
        a, b = client.persist([random_matrix(n, block, 1, on_gpu=True), random_matrix(n, block, 2, on_gpu=True)])
        fields = checked(a, b, scheme, "gpu")
        seconds, timing = wall_seconds(client, lambda run: sp.matmul(renamed(a, run), b, dtype=scheme), reps)
        rows.append(row(f"dask_{scheme}_gpu", n, seconds, timing, block=block, scheme=scheme, cluster=kind, **fields))
        seconds, timing = wall_seconds(client, lambda run: renamed(a, run) @ b, reps)
        rows.append(row("dask_cupy_sgemm_gpu", n, seconds, timing, block=block, cluster=kind))
    seconds, timing = one_gpu_seconds(n, block, scheme, reps)
    rows.append(row(f"one_gpu_{scheme}", n, seconds, timing, scheme=scheme))
    for r in rows[:2]:
        r["time_over_one_gpu"] = r["seconds"] / seconds
    return rows


def cpu_name():
    info = pathlib.Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    return f"{names[0] if names else platform.processor()} ({os.cpu_count()} CPUs)"


def header():
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "unknown"
    versions = {"python": platform.python_version(), "numpy": np.__version__, "dask": dask.__version__,
                "distributed": distributed.__version__}
    try:
        import cupy
        versions["cupy"] = cupy.__version__
    except ImportError:
        pass
    return {"device": cpu_name(), "versions": versions, "git_sha": sha,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cpu_worker_environ": WORKER_ENVIRON,
            "load_average_at_start": os.getloadavg(),   # 1, 5, 15 minutes: other processes' share
            "command": " ".join(["python3", "benchmarks/dask_scaling.py", *sys.argv[1:]])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--block", type=int, default=1024)
    parser.add_argument("--scheme", default="tf32x3")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    head = header()
    results = cpu_rows(args.n, args.block, args.scheme, args.reps)
    reason = gpu_unavailable()
    if reason is None:
        results += gpu_rows(args.reps)
    head["gpu_row"] = "ran" if reason is None else f"skipped: {reason}"
    print(f"GPU row: {head['gpu_row']}")
    out = pathlib.Path(args.out) / f"dask-scaling-{head['date'][:10]}-{head['git_sha']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**head, "results": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
