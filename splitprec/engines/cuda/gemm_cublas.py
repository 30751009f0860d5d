"""The cuBLAS GEMM engine: the scheme's products as cuBLAS GEMMs with float32 output, and float32
products as cuBLAS SGEMM itself (``sgemm``: the fp32 class's path where it is the fastest).

The parts are stacked along K (A's first to last, B's last to first, (batch, rows, terms * K')), so
each group of small products with one ``i + j`` is one GEMM over a contiguous K window; hi*hi runs
in k-chunks of ``cublas_chunk``; every call after the first adds into the result with ``beta = 1``,
one round-to-nearest float32 add. ``cublas_chunk`` is also the promotion interval of the sm90
kernel: the longest truncating tensor-core chain of any engine (``splitprec.linalg.gpu_k_block``).
"""
import functools
import math

import numpy as np

from .split import BLOCK_BYTES, ELEMENT_BYTES
from .tuning import TUNING

CUDA_TYPE = {"tf32": 0, "bf16": 14, "fp16": 2}            # CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F
CUBLAS_COMPUTE = {"tf32": 77, "bf16": 68, "fp16": 68}     # COMPUTE_32F_FAST_TF32, COMPUTE_32F
SGEMM_COMPUTE = 69      # CUBLAS_COMPUTE_32F_PEDANTIC: float32 FMAs whatever the handle's math mode
_SGEMM_SCALARS = np.array([1.0, 0.0], np.float32)     # alpha, beta: host memory for the process' life


def cublas_chunk(d, k):
    """k of hi*hi per cuBLAS call (one truncating chain) for products of inner dimension ``k``; all
    of k for one-part schemes, whose error the part's rounding dominates (2^-8 or 2^-11 per input).
    At least the kernels' k-block, so it is the longest chain of any engine (``gemm.gpu_k_block``)."""
    block = BLOCK_BYTES // ELEMENT_BYTES[d.base]
    if d.terms == 1:
        return max(block, 1 << (k - 1).bit_length())
    return 1 << int(math.log2(max(TUNING["chunk"]["per_sqrt_k"][d.base] * math.sqrt(k), block)))


@functools.lru_cache(maxsize=None)
def _diagonals(d):
    """The small products grouped by ``s = i + j``, smallest first: ``(s, first i, count)``. With A's
    parts stacked first to last and B's last to first, each group is one K window of both."""
    groups = {}
    for i, j in d.products:
        if i + j:
            groups.setdefault(i + j, []).append(i)
    out = []
    for s in sorted(groups, reverse=True):
        first = min(groups[s])
        if sorted(groups[s]) != list(range(first, first + len(groups[s]))):
            raise ValueError(f"cublas engine: scheme {d.name!r} takes products {d.products}; each i + j "
                             f"must take a contiguous range of i")
        out.append((s, first, len(groups[s])))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _host_scalars(alpha, beta):
    """(alpha, beta) as float32 host memory that lives as long as the process (cuBLAS reads it
    during the call)."""
    return np.array([alpha, beta], np.float32)


def _cublas_gemm(handle, c, pa, pb, d, *, a_col, b_col, k, alpha, beta):
    """``c = alpha * A[..., a_col:a_col+k] @ B[..., b_col:b_col+k]^T + beta * c`` by one
    ``cublasGemmStridedBatchedEx`` on stacked operands (float32 output: beta = 1 is one
    round-to-nearest add). Column-major C^T = B A^T is the row-major C."""
    from cupy_backends.cuda.libs import cublas
    batch, m, n = c.shape
    a, b = pa.parts, pb.parts
    ld, item = a.shape[-1], a.itemsize
    scalars = _host_scalars(alpha, beta).ctypes.data
    cublas.gemmStridedBatchedEx(
        handle, 1, 0, n, m, k, scalars,
        b.data.ptr + b_col * item, CUDA_TYPE[d.base], ld, 0 if b.shape[0] < batch else b[0].size,
        a.data.ptr + a_col * item, CUDA_TYPE[d.base], ld, 0 if a.shape[0] < batch else a[0].size,
        scalars + 4, c.data.ptr, 0, n, m * n, batch, CUBLAS_COMPUTE[d.base], -1)


def gemm_cublas(pa, pb, c, d, chunk):
    """The scheme's product of stacked operands by cuBLAS: each group of small products with one
    ``i + j`` as one GEMM over its stacked K (smallest first, scaled by 2**-(i+j)*shift), then hi*hi
    in k-chunks of ``chunk``; each call after the first adds its chain to ``c`` with one
    round-to-nearest add (beta = 1)."""
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas
    handle = cuda.device.get_cublas_handle()
    cublas.setStream(handle, cuda.get_current_stream().ptr)     # the stream the split ran on
    kp = pa.parts.shape[-1] // d.terms
    calls = [(first * kp, (d.terms - 1 - s + first) * kp, count * kp, 2.0 ** (-s * d.shift))
             for s, first, count in _diagonals(d)]
    calls += [(k0, (d.terms - 1) * kp + k0, min(chunk, kp - k0), 1.0) for k0 in range(0, kp, chunk)]
    for index, (a_col, b_col, k, alpha) in enumerate(calls):
        _cublas_gemm(handle, c, pa, pb, d, a_col=a_col, b_col=b_col, k=k, alpha=alpha, beta=float(index > 0))
    return c


def sgemm(a, b, c):
    """``c = a @ b`` by one ``cublasGemmStridedBatchedEx`` in float32 (pedantic: IEEE float32 FMAs,
    never TF32) for C-contiguous float32 ``a`` (batch or 1, m, k), ``b`` (batch or 1, k, n) and ``c``
    (batch, m, n), on the current stream."""
    batch, m, n = c.shape
    k = a.shape[-1]
    PreparedSgemm(m, n, k, batch, 0 if a.shape[0] < batch else m * k,
                  0 if b.shape[0] < batch else k * n)(a.data.ptr, b.data.ptr, c.data.ptr)
    return c


class PreparedSgemm:
    """``sgemm`` for fixed sizes (``stride_a``, ``stride_b``: the operands' batch strides, 0 for one
    matrix serving every batch entry), called with the device pointers of ``a``, ``b``, ``c``: the
    constant arguments are packed once (the planned calls of ``splitprec._plans``)."""

    def __init__(self, m, n, k, batch, stride_a, stride_b):
        from cupy import cuda
        from cupy_backends.cuda.libs import cublas
        self._handle, self._stream = cuda.device.get_cublas_handle, cuda.get_current_stream
        self._set_stream, self._gemm = cublas.setStream, cublas.gemmStridedBatchedEx
        scalars = _SGEMM_SCALARS.ctypes.data
        self._sizes = (0, 0, n, m, k, scalars)
        self._b, self._a = (0, n, stride_b), (0, k, stride_a)
        self._c = (0, n, m * n, batch, SGEMM_COMPUTE, -1)
        self._beta = scalars + 4

    def __call__(self, a, b, c):
        handle = self._handle()
        self._set_stream(handle, self._stream().ptr)
        self._gemm(handle, *self._sizes, b, *self._b, a, *self._a, self._beta, c, *self._c)
