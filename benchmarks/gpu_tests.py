"""Run the gpu tests on a CUDA machine and record the run in ``benchmarks/results/gpu-tests.json``.

``python3 benchmarks/gpu_tests.py --git-sha SHA [-n WORKERS]``: ``pytest -m gpu tests`` (spread over
WORKERS processes when pytest-xdist imports), then the record: ``git_sha`` (the commit that ran:
the checkout's HEAD, or ``--git-sha`` where the copy has no ``.git``), ``date``, ``device``,
``driver``, ``cupy``, ``passed``, ``failed``, ``skipped``, ``seconds``. It writes a record only
from a real run (cupy sees a GPU); the exit status is pytest's.
"""
import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "results" / "gpu-tests.json"


def head_sha():
    """The checkout's HEAD, or None outside a git checkout."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def device():
    """``(device name, driver version, cupy version)`` of GPU 0, or a SystemExit without one."""
    import cupy
    if cupy.cuda.runtime.getDeviceCount() == 0:
        raise SystemExit("gpu_tests: cupy sees no CUDA device; a record comes only from a run on a GPU")
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True)
    driver = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else str(cupy.cuda.runtime.driverGetVersion())
    return name, driver, cupy.__version__


def blas_threads(workers):
    """The environment of the pytest run: with ``workers`` processes, each BLAS gets its share of the
    cores (the reference engines' float32 runs are many small BLAS calls; a thread per core in every
    worker leaves the threads waiting for each other)."""
    env = dict(os.environ)
    if workers:
        share = str(max(1, (os.cpu_count() or 1) // workers))
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, share)
    return env


def counts(junit):
    """``(passed, failed, skipped)`` from a pytest JUnit XML report (errors count as failed)."""
    suite = ElementTree.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total, failures, errors, skipped = (int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped"))
    return total - failures - errors - skipped, failures + errors, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-sha", default=None, help="the commit that runs (default: the checkout's HEAD)")
    parser.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist processes (0: one process)")
    parser.add_argument("--record", type=pathlib.Path, default=RECORD, help="where the record goes")
    args, extra = parser.parse_known_args(argv)
    sha = args.git_sha or head_sha()
    if not sha:
        parser.error("--git-sha is needed outside a git checkout")
    name, driver, cupy_version = device()
    spread = ["-n", str(args.workers)] if args.workers and importlib.util.find_spec("xdist") else []
    with tempfile.TemporaryDirectory() as scratch:
        junit = pathlib.Path(scratch) / "gpu.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests", "-rfE", f"--junitxml={junit}",
                   *spread, *extra]
        start = time.perf_counter()
        status = subprocess.run(command, cwd=ROOT, env=blas_threads(len(spread) and args.workers)).returncode
        seconds = round(time.perf_counter() - start, 1)
        passed, failed, skipped = counts(junit)
    record = {"git_sha": sha, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": name, "driver": driver, "cupy": cupy_version, "passed": passed, "failed": failed,
              "skipped": skipped, "seconds": seconds,
              "command": " ".join(["python3 -m pytest -q -m gpu tests", *spread, *extra])}
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record))
    return status


if __name__ == "__main__":
    sys.exit(main())
