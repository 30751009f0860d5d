"""Split-precision products and FFTs on Dask arrays: every block runs through the public ops.

Members: :func:`matmul`, :func:`fft` (any ``splitprec.fft`` function), :func:`asarray`; the
public ``splitprec.matmul``, ``splitprec.fft.*`` and ``splitprec.asarray`` call them when an
operand is a dask array. Chunks are numpy arrays (the reference engine), cupy arrays (the GPU
engines, on the worker's device) or SplitArrays of either; a graph never mixes devices.
docs/dask.md describes the algorithms and their bound.

The scheme is resolved once, on the client, when the graph is built (``dtype``, else ``precision``'s
pick, else :func:`splitprec.default_scheme`'s default in the building context) and passed to every
task explicitly: the default is per thread (a ``contextvars.ContextVar``), so a task that resolved
it would run the default of whichever context computes the graph (a worker thread or process
starts from the built-in one), not that of the code that built it.

matmul (2-D ``(m, k) @ (k, n)``)
    ``C[i, j] = sum_p A[i, p] @ B[p, j]`` over the k-chunks ``p = 0 .. P-1``. Each block product is
    ``splitprec.matmul`` in the scheme, one task per ``(i, p, j)`` on the CPU (the k-chunks of an
    output block run in parallel); on the GPU one task per output block runs its P products, and
    each float32 block enters them as a SplitArray (no copy), so its device split is made once.
    The P partial products of an output block are added in one task in the order
    ``p = 0, 1, ..., P-1``, in float64, and the sum is rounded once to float32 (float64 schemes:
    float64 sum; cupy chunks: one kernel, ``engines.cuda.sums``). The order is the graph's, not
    the order in which blocks finish, so the result is bit-identical on every scheduler, in every
    run and after a lost worker's tasks are recomputed. B is rechunked along k to A's k-chunks when
    they differ, and a numpy/cupy operand becomes one block per k-chunk of the dask one.
    Accuracy: ``accuracy.gemm_bound(A, B, dtype, chunks=A.chunks[1])`` (docs/bounds.md, section
    13), checked by ``tests/test_dask.py::test_matmul_error_within_chunked_bound``.

fft
    Every transformed axis must be one chunk (as in ``dask.array.fft``); each block is transformed
    by the same function. ``fftconvolve`` takes a dask ``in1`` and a numpy/cupy kernel ``in2``;
    along a chunked convolved axis each chunk is extended by ``len(in2) - 1`` values of its
    neighbours (``dask.array.overlap``, zeros beyond the ends), convolved, and cut back, which
    needs a kernel no longer than the shortest chunk there.
"""
import functools
import inspect

import dask.array as da
import numpy as np
from dask.array.chunk_types import register_chunk_type
from dask.array.utils import meta_from_array

import splitprec
from . import fft as _fft, interop, linalg as _linalg
from ._backend import is_cupy, is_dask
from ._fft_lines import axis_index, operand as fft_operand, scheme as fft_scheme
from ._fftconvolve import _conv_axes
from .array.core import SplitArray, promote

__all__ = ["asarray", "fft", "matmul"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

register_chunk_type(SplitArray)     # dask, not SplitArray, handles e.g. ``dask_array * split_array``

_CHUNKS = {"cpu": "numpy chunks (cpu)", "gpu": "cupy chunks (gpu)"}


def _device(x, name, op):
    """``'cpu'`` or ``'gpu'``: where the chunks of dask array ``x`` live (read from its meta)."""
    meta = meta_from_array(x)
    if isinstance(meta, SplitArray):
        return meta.device
    if is_cupy(meta):
        return "gpu"
    if type(meta) is np.ndarray:
        return "cpu"
    kind = type(meta)
    raise TypeError(f"{op}: {name} has chunks of type {kind.__module__}.{kind.__qualname__}; "
                    "expected numpy, cupy or SplitArray chunks")


def _one_device(op, named):
    """The device of the ``(name, dask array)`` pairs ``named``, or a ValueError if they differ."""
    devices = [(name, _device(x, name, op)) for name, x in named]
    if len({device for _, device in devices}) > 1:
        (n0, d0), (n1, d1) = devices
        raise ValueError(f"{op}: {n0} has {_CHUNKS[d0]} and {n1} has {_CHUNKS[d1]}; expected chunks "
                         "on one device (move one, e.g. x.map_blocks(cupy.asarray))")
    return devices[0][1]


def _namespace(device):
    if device == "cpu":
        return np
    import cupy
    return cupy


def asarray(x, dtype=None, *, device=None):
    """A dask array of SplitArray chunks holding dask array ``x`` (:func:`splitprec.asarray`'s
    rules, checked on ``x``'s meta before anything is computed)."""
    meta = splitprec.asarray(meta_from_array(x), dtype, device=device)
    return x.map_blocks(functools.partial(splitprec.asarray, dtype=meta.dtype, device=device), meta=meta)


# -- matmul ----------------------------------------------------------------------------------------

def _dask_operands(a, b, op):
    """``(a, b)`` as 2-D dask arrays; a numpy/cupy operand is one block per k-chunk of the other."""
    for name, x in (("a", a), ("b", b)):
        if not (is_dask(x) or isinstance(x, np.ndarray) or is_cupy(x)):
            raise TypeError(f"{op}: {name} must be a dask, numpy or cupy array, got {type(x).__name__}")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"{op}: dask operands must be 2-D, (m, k) and (k, n); got a of shape "
                         f"{a.shape} and b of shape {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{op}: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    a = a if is_dask(a) else da.from_array(a, chunks=((a.shape[0],), b.chunks[0]))
    b = b if is_dask(b) else da.from_array(b, chunks=(a.chunks[1], (b.shape[1],)))
    return a, b


def _product_scheme(a, b, dtype, precision, op):
    """``(scheme, device, whether the result has SplitArray chunks)``, checked on the metas as
    ``splitprec.matmul`` checks arrays (SplitArray chunks: their promoted scheme by default)."""
    device = _one_device(op, (("a", a), ("b", b)))
    metas = [meta_from_array(x) for x in (a, b)]
    schemes = [m.dtype for m in metas if isinstance(m, SplitArray)]
    if schemes and dtype is None and precision is None:
        dtype = promote(*schemes)
    (oa, ob), _ = interop.read(op, a=_values(metas[0]), b=_values(metas[1]))
    target = _linalg._target(oa, ob, op) if dtype is None and precision is None else "float32"
    d = _linalg._scheme(dtype, precision, op, on_gpu=device == "gpu", target=target)
    for name, meta in zip("ab", (oa, ob)):
        _linalg._operand(meta, name, op, d)
    return d, device, bool(schemes)


def _values(x):
    """The float32 value of a SplitArray block (no copy); other arrays as they are. A block's value
    itself, not its ``__cuda_array_interface__``: a consumer of that waits for the device (cupy
    synchronizes the exporting stream), which would hold every task until its kernels finish."""
    return x._value if isinstance(x, SplitArray) else x


def _block_product(a, b, *, dtype):
    """One block product ``splitprec.matmul(a, b)``, shaped ``(m, 1, n)`` (its k-chunk's axis)."""
    return _values(splitprec.matmul(a, b, dtype=dtype))[:, None, :]


def _float64_sum(blocks):
    """float32 ``blocks`` added in float64 in their order, rounded once to float32 (nearest even,
    subnormals and overflow included)."""
    if is_cupy(blocks[0]):
        from .engines.cuda.sums import float64_sum
        return float64_sum(blocks)
    total = blocks[0].astype(np.float64)
    for block in blocks[1:]:
        total += block
    with np.errstate(over="ignore"):
        return total.astype(np.float32)


def _sum_partials(partials, *, d, split_array):
    """The partial products of one output block, added in float64 in k-chunk order and rounded
    once to the target."""
    blocks = [partial[:, 0, :] for partial in partials]
    if d.target == "float32":
        value = _float64_sum(blocks)
    else:
        value = blocks[0]
        for block in blocks[1:]:
            value = value + block
    return splitprec.asarray(value, dtype=d) if split_array else value


def _output_block(a_blocks, b_blocks, *, d, split_array):
    """Output block ``(i, j)`` in one task from the blocks ``A[i, p]`` and ``B[p, j]``: the GPU queues
    its block products and their sum back to back, with no return to the scheduler between them."""
    partials = [_block_product(x, y, dtype=d) for x, y in zip(a_blocks, b_blocks)]
    return _sum_partials(partials, d=d, split_array=split_array)


def _split_once(block, *, d):
    """A float32 GPU block as a SplitArray of scheme ``d`` (no copy: the block is the graph's, never
    written), whose device split its first product makes and every later one reuses."""
    return SplitArray._wrap(block, d)


def matmul(a, b, *, out=None, dtype=None, precision=None):
    """``splitprec.matmul(a, b, dtype=..., precision=...)`` with a dask operand: a dask array of
    the product (the module docstring gives the algorithm; SplitArray chunks in give SplitArray
    chunks out)."""
    op = "matmul"
    if out is not None:
        raise TypeError(f"{op}: out is not supported for dask operands; expected out=None")
    a, b = _dask_operands(a, b, op)
    d, device, split_array = _product_scheme(a, b, dtype, precision, op)
    if b.chunks[0] != a.chunks[1]:
        b = b.rechunk({0: a.chunks[1]})                       # B takes A's k-chunks
    xp, target = _namespace(device), np.dtype(d.target)
    meta = xp.empty((0, 0), target)
    meta = splitprec.asarray(meta, dtype=d) if split_array else meta
    if device == "gpu":
        if not split_array and d.target == "float32":
            kept = splitprec.asarray(xp.empty((0, 0), np.float32), dtype=d)
            a, b = (x.map_blocks(_split_once, d=d, meta=kept) if x.dtype == np.float32 else x for x in (a, b))
        return da.blockwise(functools.partial(_output_block, d=d, split_array=split_array), "ij",
                            a, "ip", b, "pj", concatenate=False, meta=meta)
    partials = da.blockwise(functools.partial(_block_product, dtype=d), "ipj", a, "ip", b, "pj",
                            adjust_chunks={"p": 1}, meta=xp.empty((0, 0, 0), target))
    return da.blockwise(functools.partial(_sum_partials, d=d, split_array=split_array), "ij",
                        partials, "ipj", concatenate=False, meta=meta)


# -- fft -------------------------------------------------------------------------------------------

def _one_chunk(a, axis, op, name="a"):
    count = len(a.chunks[axis])
    if count > 1:
        raise ValueError(f"{op}: {name} has {count} chunks along axis {axis} ({a.chunks[axis]}); a "
                         f"transformed axis must be one chunk (rechunk, e.g. {name}.rechunk({{{axis}: -1}}))")


def _transformed(a, params, op):
    """The transformed axes of ``a`` and the parameters for a probe with one axis in front."""
    if "axis" in params:
        axis = axis_index(params["axis"], a.ndim, op)
        return [axis], {**params, "axis": axis + 1}
    s, axes = _fft._nd_args(a, params["s"], params["axes"], op, inverse_real=op in ("irfftn", "irfft2"))
    return axes, {**params, "s": s, "axes": [axis + 1 for axis in axes]}


def fft(public, function, args, kwargs):
    """``public(*args, **kwargs)`` (a ``splitprec.fft`` function, ``function`` undecorated) with a
    dask operand: every block transformed by ``public``; checked first on an empty probe, which
    also gives the result's dtype and lengths."""
    params = inspect.signature(function).bind(*args, **kwargs)
    params.apply_defaults()
    params, op = dict(params.arguments), function.__name__
    if op == "fftconvolve":
        return _fftconvolve(public, **params)
    a = params.pop("a")
    if not is_dask(a):
        raise TypeError(f"{op}: with dask arrays, a must be the dask array; got {type(a).__name__}")
    if params.pop("out") is not None:
        raise TypeError(f"{op}: out is not supported for dask arrays; expected out=None")
    axes, probe_params = _transformed(a, params, op)
    for axis in axes:
        _one_chunk(a, axis, op)
    params["dtype"] = probe_params["dtype"] = fft_scheme(params["dtype"], op)     # on the client: see above
    xp, meta = _namespace(_device(a, "a", op)), meta_from_array(a)
    probe = public(xp.zeros((0,) + a.shape, meta.dtype), **probe_params)
    chunks = tuple((probe.shape[axis + 1],) if axis in axes else c for axis, c in enumerate(a.chunks))
    return a.map_blocks(functools.partial(public, **params), chunks=chunks,
                        meta=xp.empty((0,) * a.ndim, probe.dtype))


def _conv_checks(in1, in2, mode, axes, dtype, op):
    """fftconvolve's checks for a dask ``in1`` and a numpy/cupy ``in2``: ``(axes, result dtype,
    scheme)``, the scheme resolved here, on the client (module docstring)."""
    if not is_dask(in1) or not (isinstance(in2, np.ndarray) or is_cupy(in2)):
        raise TypeError(f"{op}: with dask arrays, in1 must be the dask array and in2 (the kernel) a "
                        f"numpy or cupy array; got {type(in1).__name__} and {type(in2).__name__}")
    device = _device(in1, "in1", op)
    if (device == "gpu") != is_cupy(in2):
        raise ValueError(f"{op}: in1 has {_CHUNKS[device]} and in2 is a {type(in2).__module__} "
                         "array; expected the kernel on the chunks' device")
    d = fft_scheme(dtype, op)
    real = in1.dtype.kind == "f" and in2.dtype.kind == "f"
    (o1, o2), _ = interop.read(op, in1=meta_from_array(in1), in2=in2)
    fft_operand(o1, op, real=real, name="in1")
    fft_operand(o2, op, real=real, name="in2")
    axes = _conv_axes(in1, in2, mode, axes, op)
    for axis in axes:
        length, chunks = in2.shape[axis], in1.chunks[axis]
        if mode == "valid" and in1.shape[axis] < length:
            raise ValueError(f"{op}: for 'valid' mode with a dask in1, in1 must be at least as large "
                             f"as in2 in every convolved axis; got shapes {in1.shape} and {in2.shape}")
        if len(chunks) > 1 and length > min(chunks):
            raise ValueError(f"{op}: in2 has length {length} along axis {axis}, longer than in1's "
                             f"shortest chunk there ({min(chunks)}); a chunked axis is convolved by "
                             "overlap only with a kernel no longer than every chunk (rechunk in1, "
                             f"e.g. in1.rechunk({{{axis}: -1}}))")
    return axes, np.dtype(np.float32 if real else np.complex64), d


def _convolved_block(block, *, public, in2, axes, depth, rows, chunks, dtype, block_id):
    """The positions of the full convolution that output block ``block_id`` holds, from ``block``
    (its chunk of in1 with ``depth[axis]`` neighbouring values on both sides of the chunked axes)
    and the kernel's rows for this block (``rows``: per-row kernel axes, their chunk starts)."""
    kernel = in2[tuple(slice(rows[ax][block_id[ax]], rows[ax][block_id[ax] + 1]) if ax in rows
                       else slice(None) for ax in range(in2.ndim))]
    y = public(block, kernel, "full", axes, dtype=dtype)
    return y[tuple(slice(depth[ax], depth[ax] + chunks[ax][block_id[ax]]) if ax in depth else slice(None)
                   for ax in range(y.ndim))]


def _fftconvolve(public, in1, in2, mode, axes, dtype):
    """``fftconvolve(in1, in2, mode, axes, dtype=dtype)`` with a dask ``in1`` (module docstring):
    the full convolution block by block, then the ``mode``'s part of it, as ``splitprec.fft``."""
    op = "fftconvolve"
    axes, out_dtype, dtype = _conv_checks(in1, in2, mode, axes, dtype, op)
    xp = _namespace(_device(in1, "in1", op))
    if in1.size == 0 or in2.size == 0:
        return da.from_array(xp.zeros((0,), out_dtype))
    depth = {ax: in2.shape[ax] - 1 for ax in axes if len(in1.chunks[ax]) > 1}
    rows = {ax: np.cumsum((0,) + in1.chunks[ax]) for ax in range(in1.ndim)
            if ax not in axes and in2.shape[ax] == in1.shape[ax] > 1}
    chunks = tuple(c[:-1] + (c[-1] + in2.shape[ax] - 1,) if ax in axes else
                   (in2.shape[ax],) if in1.shape[ax] == 1 else c for ax, c in enumerate(in1.chunks))
    extended = da.overlap.overlap(in1, depth={ax: depth.get(ax, 0) for ax in range(in1.ndim)},
                                  boundary={ax: 0 for ax in range(in1.ndim)}) if depth else in1
    block = functools.partial(_convolved_block, public=public, in2=in2, axes=axes, depth=depth,
                              rows=rows, chunks=chunks, dtype=dtype)
    y = extended.map_blocks(block, chunks=chunks, meta=xp.empty((0,) * in1.ndim, out_dtype))
    full = {ax: in1.shape[ax] + in2.shape[ax] - 1 for ax in axes}
    keep = dict(enumerate(in1.shape)) if mode == "same" else {
        ax: full[ax] if mode == "full" else in1.shape[ax] - in2.shape[ax] + 1 for ax in axes}
    return y[tuple(slice((y.shape[ax] - keep[ax]) // 2, (y.shape[ax] - keep[ax]) // 2 + keep[ax])
                   if ax in keep else slice(None) for ax in range(y.ndim))]
