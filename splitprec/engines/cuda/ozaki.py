"""The Ozaki-II GPU engine: one residue pass per operand, N int8 GEMMs by cuBLAS, one CRT pass.

- ``kernels/ozaki2_residues_sm80.cu``: per row of A (and of B transposed), the exponent and the
  int8 residues of every modulus, written (batch, N, rows, K') with K' = k rounded up to 16, so that
  both operands are K-major: cuBLAS's fast int8 layout (TN; NN ran ~11x slower on the H200,
  ANCHORS.md, "int8 cublasGemmEx, TN layout / NN layout").
- ``cublasGemmStridedBatchedEx`` with CUDA_R_8I inputs, CUDA_R_32I output and
  CUBLAS_COMPUTE_32I: one call per k-block of at most ``K_BLOCK`` (and per batch entry when only
  one operand is batched) runs every modulus as one batch, or, for a single product,
  ``cublasGemmEx`` once per modulus (faster on the H200, see ``BATCHED_GEMMS``); each product is
  exact in int32.
- ``kernels/ozaki2_crt_sm80.cu``: reduces the products modulo each modulus, recovers the integer
  product by the CRT and scales it back, the numpy engine's operations in the same order.
- ``kernels/gemm_nonfinite_sm80.cu`` (shared with the float32 engine): NaN/inf where the float64
  product has them, from the rows and columns the residue kernel flagged, and (``rescue``) the
  entries that may leave float64's range as float64 dot products; nothing is read back to the host.
"""
import functools

import numpy as np


from ...dtypes import dtype
from ...ozaki import K_BLOCK, SCHEMES, grid_bits
from .launch import launch
from .nonfinite import fix_nonfinite, nonfinite_report, norm_peak_words
from .split import MAX_GRID_Y, at, flatten_batch, product_shape
from .tuning import TUNING

RESIDUE_FILE = "ozaki2_residues_sm80.cu"
CRT_FILE = "ozaki2_crt_sm80.cu"
_PAD = 16                      # K' granularity (int8 tensor-core GEMMs want k % 16 == 0)
_CUDA_R_8I, _CUDA_R_32I, _CUBLAS_COMPUTE_32I = 3, 10, 72
_THREADS = 256
BATCHED_GEMMS = TUNING["ozaki"]["batched_gemms"]   # None: per modulus for one product, batched otherwise


def residue_expression(d):
    return f"ozaki2_residues_sm80<{d.terms}>"


def crt_expression(d):
    return f"ozaki2_crt_sm80<{d.terms}, {d.chunks}>"


def instantiations():
    """Every kernel instantiation the engine launches, ``{file: [names]}`` (all registered counts)."""
    return {RESIDUE_FILE: [residue_expression(d) for d in SCHEMES],
            CRT_FILE: [crt_expression(d) for d in SCHEMES]}


def _residues(x, d, bits, report, norm_peak=None):
    """``(planes (batch, N, rows, K') int8, exponents (batch * rows,) int32)`` of float64 ``x``
    (batch, rows, k), C-contiguous. ``report = (words, flag, lines)``: a zeroed uint32 cupy array
    and two indices into it; the kernel sets the flag word to inf's float32 bits and the line word
    of each row (from ``lines`` on) that holds NaN/inf, and, given ``norm_peak`` (an index into
    ``words``), raises that word to the largest row 2-norm exponent plus 2048."""
    import cupy
    batch, rows, k = x.shape
    pad = -(-k // _PAD) * _PAD
    planes = cupy.empty((batch, d.terms, rows, pad), np.int8)
    exponent = cupy.empty(batch * rows, np.int32)
    if batch * rows:
        launch(RESIDUE_FILE, residue_expression(d), (batch * rows, 1, 1), (_THREADS, 1, 1),
               (x, planes, exponent, at(report[0], report[1]), at(report[0], report[2]),
                0 if norm_peak is None else at(report[0], norm_peak), np.int32(rows),
                np.int32(k), np.int32(pad), np.int32(bits), np.int32(grid_bits(k))))
    return planes, exponent


@functools.lru_cache(maxsize=None)
def _int_scalars():
    """Host int32 (alpha, beta) = (1, 0), alive as long as the process (cuBLAS reads them)."""
    return np.array([1, 0], np.int32)


def _products(pa, pb, batch, d, *, batched=None):
    """int32 (blocks, batch, N, m, ldc): the residue products of every modulus and k-block, rows
    padded to ``ldc`` = n rounded up to 4 (16-byte aligned rows for the int8 tensor-core kernels).
    ``batched``: one ``gemmStridedBatchedEx`` over the moduli (True) or one ``gemmEx`` per modulus
    (False); None: ``BATCHED_GEMMS``, and where that is None, True exactly when ``batch > 1``."""
    import cupy
    from cupy_backends.cuda.libs import cublas
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)     # where the residues ran
    count, m, pad = pa.shape[1:]
    n = pb.shape[2]
    blocks = -(-pad // K_BLOCK)
    ldc = -(-n // 4) * 4
    prod = cupy.empty((blocks, batch, count, m, ldc), np.int32)
    scalars = _int_scalars().ctypes.data
    choice = BATCHED_GEMMS if batched is None else batched
    batched = batch > 1 if choice is None else choice
    together = batched and pa.shape[0] == pb.shape[0] == batch     # one batch over (entry, modulus)
    for blk in range(blocks):
        k0, kb = blk * K_BLOCK, min(K_BLOCK, pad - blk * K_BLOCK)
        for e in range(1 if together else batch):
            a, b, c = (pa, pb, prod[blk]) if together else \
                (pa[e if pa.shape[0] > 1 else 0], pb[e if pb.shape[0] > 1 else 0], prod[blk, e])
            if batched:
                cublas.gemmStridedBatchedEx(
                    handle, 1, 0, n, m, kb, scalars, b.data.ptr + k0, _CUDA_R_8I, pad, n * pad,
                    a.data.ptr + k0, _CUDA_R_8I, pad, m * pad, scalars + 4, c.data.ptr, _CUDA_R_32I, ldc,
                    m * ldc, count * (batch if together else 1), _CUBLAS_COMPUTE_32I, -1)
                continue
            for l in range(count):
                cublas.gemmEx(handle, 1, 0, n, m, kb, scalars, b[l].data.ptr + k0, _CUDA_R_8I, pad,
                              a[l].data.ptr + k0, _CUDA_R_8I, pad, scalars + 4, c[l].data.ptr,
                              _CUDA_R_32I, ldc, _CUBLAS_COMPUTE_32I, -1)
    return prod


@functools.lru_cache(maxsize=None)
def _device_constants(name, device):
    """``dtype(name).crt_constants()`` on device ``device``, copied once."""
    import cupy
    return cupy.asarray(dtype(name).crt_constants())


def _crt(prod, ea, eb, batch, n, d):
    """float64 (batch, m, n) from the products by the CRT kernel (exponents: (batch or 1) * rows)."""
    import cupy
    blocks, _, count, m, ldc = prod.shape
    out = cupy.empty((batch, m, n), np.float64)
    consts = _device_constants(d.name, cupy.cuda.Device().id)
    grid = (-(-n // _THREADS), min(batch * m, MAX_GRID_Y), 1)       # the kernel loops over rows
    launch(CRT_FILE, crt_expression(d), grid, (_THREADS, 1, 1),
           (prod, out, ea, eb, consts, np.int32(m), np.int32(n), np.int32(batch * m), np.int32(ldc),
            np.int32(blocks), np.int64(batch * count * m * ldc),
            np.int32(m if ea.size == batch * m else 0), np.int32(n if eb.size == batch * n else 0)))
    return out


def matmul(a, b, d, *, rescue=False):
    """``a @ b`` for float64 cupy ``a`` (..., m, k) and ``b`` (..., k, n), batch dimensions
    broadcast, queued on the current stream with no host wait: the numpy engine's result bit for
    bit, NaN/inf where the float64 product has them. ``rescue``: the entries whose rows' and
    columns' 2-norms allow a result beyond float64's range recomputed as float64 dot products on
    the device (``splitprec.engines.fp64.rescue_overflow``'s rule), so such results are ±inf.

    Accuracy: ``accuracy.gemm_bound(a, b, d)``, checked by
    ``tests/test_ozaki.py::test_gpu_matmul_matches_the_numpy_engine``.
    """
    import cupy
    batch_shape, batch, m, k, n = product_shape(a, b)
    if batch == 0 or m == 0 or n == 0 or k == 0:
        return cupy.zeros(batch_shape + (m, n), np.float64)
    a, b = flatten_batch(a, batch_shape, batch), flatten_batch(b, batch_shape, batch)
    report, for_a, for_b = nonfinite_report(a, b)
    norm_a, norm_b = norm_peak_words(report) if rescue else (None, None)
    bits_a, bits_b = d.bits
    pa, ea = _residues(a, d, bits_a, for_a, norm_a)
    pb, eb = _residues(cupy.ascontiguousarray(cupy.swapaxes(b, -1, -2)), d, bits_b, for_b, norm_b)
    c = fix_nonfinite(a, b, _crt(_products(pa, pb, batch, d), ea, eb, batch, n, d), report, (ea, eb),
                      bits=d.bits)
    return c.reshape(batch_shape + (m, n))
