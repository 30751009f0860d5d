"""The GPU GEMM dispatch: split on the device, pick an engine and tile for the shape, fix NaN/inf.

Every engine keeps hi*hi in its own tensor-core accumulator (which truncates) and promotes its
partial sum into float32 with round-to-nearest adds at least every ``gpu_k_block(d, k)`` values of
k, adding the small products (i + j > 0) before it (Ootomo & Yokota, arXiv 2203.03341); the model
is ``accuracy.gemm_bound(..., engine="gpu")`` (docs/bounds.md, section 5). The engines: ``"sm90"``
(gemm_sm90, Hopper), ``"sm80"`` (gemm_sm80, mma.sync), ``"cublas"`` (gemm_cublas), ``"fused"``
(gemm_fused: split as loaded, for batches of small matrices; bit for bit ``"sm80"``'s). ``"auto"``
picks one by shape from the measurements in ``tuning.json`` (docs/kernels.md). ``precision="fp32"``
runs ``matmul_fp32``: per shape, cuBLAS SGEMM, the float32 kernel for batches of small products
(sgemm_small) or the fastest fp32-class scheme (``fp32_path``).
"""
import math

import numpy as np

from ...dtypes import cheapest, dtype, dtypes
from . import launch
from .gemm_fused import FUSED_FILE, TILES as FUSED_TILES, fused_expression, fused_launch, gemm_fused
from .gemm_cublas import PreparedSgemm, cublas_chunk, gemm_cublas, sgemm
from .gemm_sm80 import GEMM_FILE, Tile, gemm_expression, gemm_sm80
from .gemm_sm90 import GEMM90_FILE, TILE as SM90_TILE, gemm90_expression, gemm_sm90, pieces_expression
from .nonfinite import NONFINITE_EXPRESSION, NONFINITE_FILE, fix_nonfinite, fix_sgemm, nonfinite_report, sgemm_fixup
from .sgemm_small import EXPRESSION as SMALL_EXPRESSION, SMALL_FILE, sgemm_small, small_launch
from .split import FORMAT_CODE, SCALE_FILE, SPLIT_FILE, cached_split, flatten_batch, padded_k, split_expression, \
    product_shape, unscale
from .tuning import TUNING

ENGINES = ("auto", "sm90", "sm80", "cublas", "fused")
DEFAULT_TILE = Tile(*TUNING["tiles"]["default"])
TILES = {name: Tile(*shape) for name, shape in TUNING["tiles"]["per_scheme"].items()}
SMALL = TUNING["small"]["max_mn"]
SMALL_TILE = Tile(*TUNING["small"]["tile"])
CUBLAS_MIN_WORK = TUNING["cublas"]["min_work"]
CUBLAS_LARGE = frozenset(TUNING["cublas"]["large_schemes"])
FUSED = TUNING["fused"]
SGEMM_BELOW = TUNING["precision_fp32"]["sgemm_below"]
SMALL_FP32 = TUNING["precision_fp32"]["small"]
FP32_SCHEME = TUNING["precision_fp32"]["scheme"]


def gpu_k_block(d, k):
    """The longest run of k that any GPU engine accumulates in the tensor core before a
    round-to-nearest float32 promotion, for products of inner dimension ``k``."""
    return cublas_chunk(d, k)


def auto_tile(d, m, n):
    """The mma.sync kernel's launch shape for an (m, n) output under ``"auto"``."""
    return SMALL_TILE if max(m, n) <= SMALL else TILES.get(d.name, DEFAULT_TILE)


def class_scheme(precision):
    """The scheme a precision class stands for on the GPU where one scheme serves every shape
    (SplitArray and tracked contractions, dask blocks): the fp32 class's scheme for large products
    (``tuning.json``), ``dtypes.cheapest`` for fp64."""
    return dtype(FP32_SCHEME) if precision == "fp32" else cheapest(precision)


def fp32_path(m, n, k, batch):
    """What ``precision="fp32"`` runs on the GPU for a (batch of) m x n x k product: ``"sgemm_small"``
    (float32 itself, one pass over the data) for small products, ``"sgemm"`` (cuBLAS SGEMM) where the
    measurements in ``tuning.json`` found it the fastest (``min(m, n)``, ``k`` or the work below its
    thresholds), else the fp32-class scheme named there."""
    if max(m, n) <= SMALL_FP32["max_mn"] and k <= SMALL_FP32["max_k"]:
        return "sgemm_small"
    small = (min(m, n) < SGEMM_BELOW["min_mn"] or k < SGEMM_BELOW["k"]
             or m * n * k * batch < SGEMM_BELOW["work"])
    return "sgemm" if small else FP32_SCHEME


def auto_engine(d, m, n, k, batch):
    """The engine ``"auto"`` runs. The fused kernel for outputs of at most ``FUSED["max_mn"]`` squared
    with k of at most ``FUSED["max_k"]`` (``tuning.json``). mma.sync with small blocks for other
    outputs of at most ``SMALL`` x ``SMALL``. On compute capability 9.0 the sm90 kernel for multi-part schemes, but for the large
    products (``CUBLAS_MIN_WORK`` multiply-adds and at least as many output tiles as SMs) of the
    ``CUBLAS_LARGE`` schemes. Otherwise cuBLAS for large products and mma.sync for the rest."""
    if max(m, n) <= FUSED["max_mn"] and k <= FUSED["max_k"]:
        return "fused"
    if max(m, n) <= SMALL:
        return "sm80"
    large = m * n * k * batch >= CUBLAS_MIN_WORK
    wave = -(-m // SM90_TILE) * -(-n // SM90_TILE) * batch >= launch.multiprocessors()
    if d.terms > 1 and launch.hopper() and not (large and wave and d.name in CUBLAS_LARGE):
        return "sm90"
    return "cublas" if large else "sm80"


def instantiations():
    """Every kernel instantiation the engine launches (each scheme with its tile), ``{file: [names]}``."""
    schemes = [dtype(name) for name in dtypes() if dtype(name).base in FORMAT_CODE]
    return {SPLIT_FILE: sorted({split_expression(d, transpose=t) for d in schemes for t in (False, True)}),
            GEMM_FILE: sorted({gemm_expression(d, tile) for d in schemes
                               for tile in (TILES.get(d.name, DEFAULT_TILE), SMALL_TILE)}),
            GEMM90_FILE: sorted({gemm90_expression(d) for d in schemes} | {pieces_expression(d) for d in schemes}),
            FUSED_FILE: sorted({fused_expression(d, tile) for d in schemes for tile in FUSED_TILES}),
            SMALL_FILE: [SMALL_EXPRESSION],
            SCALE_FILE: ["row_exponents", "column_peaks", "peak_exponents", "scale_rows_cols"],
            NONFINITE_FILE: sorted(NONFINITE_EXPRESSION.values())}


def matmul_fp32(a, b):
    """``a @ b`` (cupy float32, ndim >= 2, batch dimensions broadcast) for ``precision="fp32"``: the
    path of ``fp32_path``, with the float64 product's NaN/inf and range either way; queued on the
    current stream with no host wait.

    Accuracy: ``accuracy.gemm_bound(a, b, precision="fp32", engine="gpu")``, checked by
    ``tests/test_plans.py::test_gpu_precision_fp32_within_bound``.
    """
    import cupy
    batch_shape, batch, m, k, n = product_shape(a, b)
    path = fp32_path(m, n, k, batch)
    if path not in ("sgemm", "sgemm_small"):
        return matmul(a, b, dtype(path), checked=True)
    if batch == 0 or m == 0 or n == 0 or k == 0:
        return cupy.zeros(batch_shape + (m, n), np.float32)
    a, b = flatten_batch(a, batch_shape, batch), flatten_batch(b, batch_shape, batch)
    c = cupy.empty((batch, m, n), np.float32)
    c = sgemm_small(a, b, c) if path == "sgemm_small" else fix_sgemm(a, b, sgemm(a, b, c))
    return c.reshape(batch_shape + (m, n))


def matmul(a, b, d, *, engine="auto", tile=None, chunk=None, checked=False, caches=(None, None)):
    """``a @ b`` (cupy float32, ndim >= 2, batch dimensions broadcast) in scheme ``d``, queued on the
    current stream with no host wait.

    ``tile``: the mma.sync kernel's launch shape; ``chunk``: the hi*hi k-chunk of the cuBLAS and
    sm90 engines (default ``cublas_chunk(d, k)``). Without ``checked`` the inputs must be finite.
    ``checked=True`` (the public call; the fused engine always is): NaN/inf in the result exactly where the float64 product has
    them, and entries whose narrow products overflow recomputed as float64 dot products, all on the
    device (the split reports NaN/inf and peaks as it reads; ``kernels/gemm_nonfinite_sm80.cu``).
    ``caches``: per operand None or a ``cache(key, make)`` (``SplitArray._cached``) that keeps its
    split operand (``cached_split``).

    Accuracy: ``accuracy.gemm_bound(a, b, d, engine="gpu")``, checked by
    ``tests/test_kernels_gemm.py::test_gpu_matmul_error_within_bound``.
    """
    import cupy
    batch_shape, batch, m, k, n = product_shape(a, b)
    if batch == 0 or m == 0 or n == 0 or k == 0:
        return cupy.zeros(batch_shape + (m, n), np.float32)
    if engine not in ENGINES:
        raise ValueError(f"matmul: unknown GPU engine {engine!r}; expected one of {ENGINES}")
    if engine == "auto":
        engine = auto_engine(d, m, n, k, batch)
    a, b = flatten_batch(a, batch_shape, batch), flatten_batch(b, batch_shape, batch)
    if engine == "fused":
        return gemm_fused(a, b, cupy.empty((batch, m, n), np.float32), d).reshape(batch_shape + (m, n))
    pad = padded_k(k, d)
    report, for_a, for_b = nonfinite_report(a, b) if checked else (None, None, None)
    stacked = engine == "cublas"
    pa = cached_split(a, d, stacked=stacked, transpose=False, pad=pad, report=for_a, cache=caches[0])
    pb = cached_split(b, d, stacked=stacked, transpose=True, pad=pad, report=for_b, cache=caches[1])
    c = cupy.empty((batch, m, n), np.float32)
    if engine == "cublas":
        gemm_cublas(pa, pb, c, d, chunk or cublas_chunk(d, k))
        if pa.exponent is not None:
            unscale(c, pa, pb)
    elif engine == "sm90":
        gemm_sm90(pa, pb, c, d, chunk or cublas_chunk(d, k))
    else:
        gemm_sm80(pa, pb, c, d, tile or auto_tile(d, m, n))
    if checked:
        fix_nonfinite(a, b, c, report, (pa.exponent, pb.exponent), d.overflow_exponent(k))
    return c.reshape(batch_shape + (m, n))


class DirectCall:
    """A product prepared for operands of one layout whose work is a fixed set of prepared launches,
    each called with the pointers of ``a``, ``b`` and the result: a call allocates the result of
    ``shape``, launches, and checks nothing (the planned calls of ``splitprec._plans``;
    :func:`direct_call`)."""

    def __init__(self, shape, launches):
        import cupy
        self._shape, self._launches, self._empty = shape, launches, cupy.empty

    def __call__(self, a, b):
        c = self._empty(self._shape, np.float32)
        pointers = (a.data.ptr, b.data.ptr, c.data.ptr)
        for run in self._launches:
            run(*pointers)
        return c


def _matrices(a, b):
    """``a``, ``b`` with a 1-D operand as a matrix (a row for ``a``, a column for ``b``), as ``matmul``."""
    return (a[None] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)


def direct_call(a, b, d=None):
    """A :class:`DirectCall` for cupy ``a``, ``b`` in scheme ``d`` (None: ``precision="fp32"``) where
    the layout needs no copy (C-contiguous float32 operands, each batch 1 or the product's, nothing
    empty) and the product is SGEMM (``fp32_path``: one cuBLAS call, one fix-up launch), one launch of
    ``sgemm_small`` or of the fused engine (``auto_engine``); None otherwise."""
    if a.dtype != np.float32 or b.dtype != np.float32 or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    a2, b2 = _matrices(a, b)
    batch_shape, batch, m, k, n = product_shape(a2, b2)
    own_a, own_b = math.prod(a2.shape[:-2]), math.prod(b2.shape[:-2])
    if 0 in (batch, m, n, k) or own_a not in (1, batch) or own_b not in (1, batch):
        return None
    shape = batch_shape + (m,) * (a.ndim > 1) + (n,) * (b.ndim > 1)        # numpy's, for vectors
    if d is None:
        path = fp32_path(m, n, k, batch)
        if path == "sgemm":
            return DirectCall(shape, (PreparedSgemm(m, n, k, batch, 0 if own_a < batch else m * k,
                                                    0 if own_b < batch else k * n),
                                      sgemm_fixup(m, n, k, batch, own_a > 1, own_b > 1)))
        if path == "sgemm_small":
            return DirectCall(shape, (small_launch(m, n, k, batch, own_a > 1, own_b > 1),))
        d = dtype(path)
    if d.base not in FORMAT_CODE or auto_engine(d, m, n, k, batch) != "fused":
        return None
    return DirectCall(shape, (fused_launch(d, m, n, k, batch, own_a > 1, own_b > 1),))
