"""The GPU GEMM dispatch: split on the device, pick an engine and tile for the shape, fix NaN/inf.

Every engine keeps hi*hi in its own tensor-core accumulator (which truncates) and promotes its
partial sum into float32 with round-to-nearest adds at least every ``gpu_k_block(d, k)`` values of
k, adding the small products (i + j > 0) before it (Ootomo & Yokota, arXiv 2203.03341); the model
is ``accuracy.gemm_bound(..., engine="gpu")`` (docs/bounds.md, section 5). The engines: ``"sm90"``
(gemm_sm90, Hopper), ``"sm80"`` (gemm_sm80, mma.sync), ``"cublas"`` (gemm_cublas). ``"auto"``
picks one by shape from the measurements in ``tuning.json`` (docs/kernels.md).
"""
import math

import numpy as np

from ...dtypes import cheapest, dtype, dtypes
from . import launch
from .gemm_cublas import cublas_chunk, gemm_cublas
from .gemm_sm80 import GEMM_FILE, Tile, gemm_expression, gemm_sm80
from .gemm_sm90 import GEMM90_FILE, TILE as SM90_TILE, gemm90_expression, gemm_sm90, pieces_expression
from .nonfinite import NONFINITE_EXPRESSION, NONFINITE_FILE, fix_nonfinite, nonfinite_report
from .split import FORMAT_CODE, SCALE_FILE, SPLIT_FILE, cached_split, flatten_batch, padded_k, split_expression, \
    product_shape, unscale
from .tuning import TUNING

ENGINES = ("auto", "sm90", "sm80", "cublas")
DEFAULT_TILE = Tile(*TUNING["tiles"]["default"])
TILES = {name: Tile(*shape) for name, shape in TUNING["tiles"]["per_scheme"].items()}
SMALL = TUNING["small"]["max_mn"]
SMALL_TILE = Tile(*TUNING["small"]["tile"])
CUBLAS_MIN_WORK = TUNING["cublas"]["min_work"]
CUBLAS_LARGE = frozenset(TUNING["cublas"]["large_schemes"])
MEASURED = TUNING["measured"]["tflops"]


def gpu_k_block(d, k):
    """The longest run of k that any GPU engine accumulates in the tensor core before a
    round-to-nearest float32 promotion, for products of inner dimension ``k``."""
    return cublas_chunk(d, k)


def auto_tile(d, m, n):
    """The mma.sync kernel's launch shape for an (m, n) output under ``"auto"``."""
    return SMALL_TILE if max(m, n) <= SMALL else TILES.get(d.name, DEFAULT_TILE)


def fastest(precision):
    """The fastest measured scheme of ``precision`` class on the GPU (``dtypes.cheapest`` if none)."""
    if precision != "fp32":
        return cheapest(precision)
    measured = [dtype(name) for name in MEASURED if dtype(name).fp32_class]
    if not measured:
        return cheapest(precision)
    return max(measured, key=lambda d: math.prod(MEASURED[d.name]))


def auto_engine(d, m, n, k, batch):
    """The engine ``"auto"`` runs. mma.sync with small blocks for outputs of at most ``SMALL`` x
    ``SMALL``. On compute capability 9.0 the sm90 kernel for multi-part schemes, but for the large
    products (``CUBLAS_MIN_WORK`` multiply-adds and at least as many output tiles as SMs) of the
    ``CUBLAS_LARGE`` schemes. Otherwise cuBLAS for large products and mma.sync for the rest."""
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
            SCALE_FILE: ["row_exponents", "column_peaks", "peak_exponents", "scale_rows_cols"],
            NONFINITE_FILE: sorted(NONFINITE_EXPRESSION.values())}


def matmul(a, b, d, *, engine="auto", tile=None, chunk=None, checked=False, caches=(None, None)):
    """``a @ b`` (cupy float32, ndim >= 2, batch dimensions broadcast) in scheme ``d``, queued on the
    current stream with no host wait.

    ``tile``: the mma.sync kernel's launch shape; ``chunk``: the hi*hi k-chunk of the cuBLAS and
    sm90 engines (default ``cublas_chunk(d, k)``). Without ``checked`` the inputs must be finite.
    ``checked=True`` (the public call): NaN/inf in the result exactly where the float64 product has
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
    pad = padded_k(k, d)
    a, b = flatten_batch(a, batch_shape, batch), flatten_batch(b, batch_shape, batch)
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
