"""Kernel sources: read ``kernels/*.cu``, compile each instantiation once with NVRTC, cache, launch.

Sources come from the checkout's ``kernels/`` directory or, installed, the ``splitprec.kernels``
package. ``#include "common/..."`` lines are inlined here, so NVRTC needs no include path. Kernels
are compiled for the current device (``sm_90a`` on compute capability 9.0, ``sm_XY`` elsewhere)
through ``cupy.RawModule(backend="nvrtc")``; an instantiation is a C++ name expression such as
``gemm_split_sm80<1, 3, 511u, 0, 4, 2, 3>``.
"""
import ctypes
import functools
import importlib.resources
import pathlib
import re
import threading

_CHECKOUT = pathlib.Path(__file__).resolve().parents[3] / "kernels"
_INCLUDE = re.compile(r'^#include "(common/[\w.]+)"\s*$', re.MULTILINE)
# cupy appends -ftz=true to every NVRTC compile; the CI build uses the same. Where subnormals matter
# (the split, the promotion adds) the kernels use inline PTX without .ftz (kernels/common/pow2.cuh).
OPTIONS = ("--std=c++17", "-ftz=true")


def _read(relative):
    """Text of ``kernels/<relative>`` from the checkout, else from the installed package."""
    path = _CHECKOUT / relative
    if path.is_file():
        return path.read_text()
    return importlib.resources.files("splitprec.kernels").joinpath(relative).read_text()


@functools.lru_cache(maxsize=None)
def source(filename):
    """The compilable text of ``kernels/<filename>`` with its ``common/`` includes inlined once each."""
    seen = set()

    def inline(match):
        name = match.group(1)
        if name in seen:
            return ""
        seen.add(name)
        return _INCLUDE.sub(inline, _read(name).replace("#pragma once", ""))

    return _INCLUDE.sub(inline, _read(filename))


def arch_option(capability):
    """NVRTC ``-arch`` for a compute capability string such as ``"90"``: 9.0 gets ``sm_90a`` (wgmma)."""
    return f"-arch=sm_{capability}{'a' if capability == '90' else ''}"


@functools.lru_cache(maxsize=None)
def _function(filename, expression, capability):
    import cupy
    module = cupy.RawModule(code=source(filename), options=(arch_option(capability), OPTIONS[0]),
                            backend="nvrtc", name_expressions=(expression,))
    return module.get_function(expression)


@functools.lru_cache(maxsize=None)
def _allow_optin_shared(function, device):
    """Let ``function`` take the device's opt-in shared memory on ``device`` (launches asking for more
    than 48 KiB need it): once per device, not a driver query per launch."""
    import cupy
    runtime = cupy.cuda.runtime
    optin = runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, device)
    function.max_dynamic_shared_size_bytes = optin - function.shared_size_bytes


@functools.lru_cache(maxsize=None)
def _multiprocessors(device):
    import cupy
    return cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrMultiProcessorCount, device)


def multiprocessors():
    """The SM count of the current GPU (cached per device)."""
    import cupy
    return _multiprocessors(cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _resident_blocks(filename, expression, threads, shared_bytes, device):
    from cupy_backends.cuda.api import driver
    function = kernel(filename, expression)
    if shared_bytes > 48 * 1024:
        _allow_optin_shared(function, device)
    per_multiprocessor = driver.occupancyMaxActiveBlocksPerMultiprocessor(
        getattr(function, "kernel", function).ptr, threads, shared_bytes)
    return max(per_multiprocessor, 1) * _multiprocessors(device)


def resident_blocks(filename, expression, threads, shared_bytes):
    """How many blocks of ``threads`` threads with ``shared_bytes`` of dynamic shared memory the
    current GPU runs at once: the grid of a kernel that loops over its work (cached per device)."""
    import cupy
    return _resident_blocks(filename, expression, threads, shared_bytes, cupy.cuda.runtime.getDevice())


def hopper():
    """True on a compute capability 9.0 device, where wgmma and TMA exist (sm_90a kernels)."""
    import cupy
    return cupy.cuda.Device().compute_capability == "90"


def kernel(filename, expression):
    """The compiled ``cupy.RawKernel`` for ``expression`` in ``kernels/<filename>`` (cached)."""
    import cupy
    return _function(filename, expression, cupy.cuda.Device().compute_capability)


def launch(filename, expression, grid, block, args, shared_bytes=0):
    """Run one instantiation on the current stream; raises the first CUDA error of the launch."""
    import cupy
    function = kernel(filename, expression)
    if shared_bytes > 48 * 1024:
        _allow_optin_shared(function, cupy.cuda.runtime.getDevice())
    function(tuple(grid), tuple(block), args, shared_mem=shared_bytes)


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, then a 64-byte value union at offset 8."""
    _fields_ = [("id", ctypes.c_int), ("padding", ctypes.c_char * 4), ("value", ctypes.c_int * 16)]


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig of ``cuLaunchKernelEx``."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attributes", ctypes.POINTER(_LaunchAttribute)),
                ("attribute_count", ctypes.c_uint)]


_PROGRAMMATIC_STREAM_SERIALIZATION = 6       # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


@functools.lru_cache(maxsize=None)
def _launch_kernel_ex():
    """The CUDA driver's ``cuLaunchKernelEx``, through ctypes (cupy does not wrap it)."""
    function = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    function.argtypes = (ctypes.POINTER(_LaunchConfig), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    function.restype = ctypes.c_int
    return function


class PreparedLaunch:
    """One instantiation with a fixed grid, block and scalar arguments, launched with new leading
    pointer arguments: the argument block is packed once (``args``: ctypes values, pointers as
    ``c_void_p``; ``shared_bytes`` of dynamic shared memory) and a call is one ``cuLaunchKernel`` on
    the current stream, a fraction of a ``RawKernel`` call's host time (the planned calls of
    ``splitprec._plans``). ``overlap=True`` (a kernel that calls ``wait_for_previous_kernel`` before
    reading the previous kernel's output, ``kernels/common/chain.cuh``): on Hopper its blocks are
    launched while the stream's previous kernel finishes (programmatic dependent launch), which
    hides the gap between the two."""

    def __init__(self, filename, expression, grid, block, args, shared_bytes=0, overlap=False):
        import cupy
        compiled = kernel(filename, expression)
        if shared_bytes > 48 * 1024:
            _allow_optin_shared(compiled, cupy.cuda.runtime.getDevice())
        self._shared = shared_bytes
        self._function = getattr(compiled, "kernel", compiled).ptr       # the CUfunction
        self._args = args
        self._params = (ctypes.c_void_p * len(args))(*(ctypes.addressof(x) for x in args))
        self._shape = (*grid, *block)
        self._lock = threading.Lock()        # the argument block is shared: one launch at a time
        self._launch = cupy.cuda.driver.launchKernel
        self._config = None
        if overlap and hopper():
            attribute = _LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
            attribute.value[0] = 1
            self._attribute = attribute
            self._config = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared_bytes,
                                         None, ctypes.pointer(attribute), 1)

    def __call__(self, *pointers):
        import cupy
        stream = cupy.cuda.get_current_stream().ptr
        with self._lock:
            for slot, pointer in zip(self._args, pointers):
                slot.value = pointer
            if self._config is None:
                self._launch(self._function, *self._shape, self._shared, stream, ctypes.addressof(self._params), 0)
                return
            self._config.stream = stream
            status = _launch_kernel_ex()(ctypes.byref(self._config), self._function,
                                         ctypes.addressof(self._params), None)
        if status:
            cupy.cuda.driver.check_status(status)
