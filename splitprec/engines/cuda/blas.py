"""The cuBLAS handle bound to the current stream, also while a CUDA graph is being captured.

cupy's ``cublas.setStream`` refuses a capturing stream, although cuBLAS's GEMMs can be captured
(cuBLAS documentation, "CUDA Graphs Support") when they run on a workspace that lives as long as
the graph. :func:`handle` binds the stream through cupy outside a capture (which also gives cuBLAS
back its own workspace pool); inside one (:func:`capturing`, entered by ``replay.GraphCall``) it
binds it through libcublas itself and hands cuBLAS a workspace of the default size from the
capture's memory pool, which the graph's plan keeps (32 MiB per captured plan that calls cuBLAS).
"""
import contextlib
import ctypes
import functools
import threading

_CAPTURE = threading.local()            # .workspaces: the open capture's list, or absent


def workspace_bytes():
    """cuBLAS's default workspace size on the current device: 32 MiB from compute capability 9.0
    (Hopper), 4 MiB before, so a captured GEMM chooses the algorithm the direct call chooses."""
    import cupy
    return (32 if int(cupy.cuda.Device().compute_capability) >= 90 else 4) << 20


@functools.lru_cache(maxsize=None)
def _libcublas():
    """libcublas as cupy loaded it (by soname; the CUDA 13 and 12 wheels' names)."""
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("libcublas: no libcublas.so.13, .12 or .so could be loaded")


def handle():
    """cupy's cuBLAS handle of this thread and device, bound to the current stream."""
    import cupy
    from cupy_backends.cuda.libs import cublas
    blas = cupy.cuda.device.get_cublas_handle()
    stream = cupy.cuda.get_current_stream().ptr
    workspaces = getattr(_CAPTURE, "workspaces", None)
    if workspaces is None:
        cublas.setStream(blas, stream)
        return blas
    size = workspace_bytes()
    if not workspaces:
        workspaces.append(cupy.cuda.alloc(size))
    workspace = workspaces[0]
    lib = _libcublas()
    for status in (lib.cublasSetStream_v2(ctypes.c_void_p(blas), ctypes.c_void_p(stream)),
                   lib.cublasSetWorkspace_v2(ctypes.c_void_p(blas), ctypes.c_void_p(workspace.ptr),
                                             ctypes.c_size_t(size))):
        if status:
            raise RuntimeError(f"cuBLAS refused the capturing stream or its workspace (status {status})")
    return blas


@contextlib.contextmanager
def capturing(workspaces):
    """Within the block, :func:`handle` serves a capture: the workspace it gives cuBLAS is
    ``workspaces[0]``, allocated on first need by the current allocator (the capture's pool)."""
    _CAPTURE.workspaces = workspaces
    try:
        yield
    finally:
        del _CAPTURE.workspaces
