"""Where a report's numbers come from: versions, BLAS, CPU/GPU, date (``collect()``).

Every field is best effort: what cannot be found reads ``"unknown"`` (or is left out, for the git
sha outside a checkout and the GPU where none is used), and nothing here raises.
"""
import datetime
import os
import platform
import subprocess
import sys

import numpy as np

import splitprec


def collect(gpu=False):
    """A dict of strings: splitprec version and git sha, python, numpy and its BLAS, scipy,
    CPU model, GPU name (``gpu=True``), UTC date."""
    info = {"splitprec": getattr(splitprec, "__version__", None) or _distribution_version(),
            "python": platform.python_version(), "numpy": np.__version__, "blas": _blas(),
            "scipy": _module_version("scipy"), "cpu": _cpu_model(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    sha = _git_sha()
    if sha:
        info["git_sha"] = sha
    if gpu:
        info["gpu"] = _gpu_name()
    return info


def as_text(info):
    """One line, ``key value; key value; ...``."""
    return "; ".join(f"{key} {value}" for key, value in info.items())


def _distribution_version():
    try:
        from importlib.metadata import version
        return version("splitprec")
    except Exception:
        return "unknown"


def _module_version(name):
    module = sys.modules.get(name)
    try:
        module = module or __import__(name)
        return module.__version__
    except Exception:
        return "unknown"


def _git_sha():
    """HEAD of the checkout splitprec is imported from, or None (an installed wheel, no git)."""
    here = os.path.dirname(os.path.abspath(splitprec.__file__))
    try:
        done = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode:
        return None
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
    return done.stdout.strip() + ("-dirty" if dirty else "")


def _blas():
    """numpy's BLAS: threadpoolctl's view of the loaded library when installed (name, version,
    threads), else ``numpy.show_config``'s build record."""
    try:
        from threadpoolctl import threadpool_info
        found = [f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
                 for p in threadpool_info() if p.get("user_api") == "blas"]
        if found:
            return ", ".join(found)
    except Exception:
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:
        return "unknown"


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _gpu_name():
    try:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return "unknown"
