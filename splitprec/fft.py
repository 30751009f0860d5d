"""Discrete Fourier transforms whose butterflies are split-precision matrix products.

Routines (numpy.fft's names, signatures and semantics; ``i`` = inverse transform, ``r`` = transform
of real data, ``h`` = of Hermitian-symmetric data (a real spectrum), ``n`` = n-dimensional, ``2`` =
two-dimensional)::

    fft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None)        ifft(...)
    rfft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None)       irfft(...)
    hfft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None)       ihfft(...)
    fftn(a, s=None, axes=None, norm=None, out=None, *, dtype=None)     ifftn(...)  rfftn(...)  irfftn(...)
    fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, dtype=None) ifft2(...)  rfft2(...)  irfft2(...)
    fftfreq(n, d=1.0, device=None)    rfftfreq(...)    fftshift(x, axes=None)    ifftshift(...)
    next_fast_len(target, real=False)                                 (scipy.fft's)
    fftconvolve(in1, in2, mode="full", axes=None, *, dtype=None)      (scipy.signal's)

Shared parameters, as in numpy.fft:

- ``n`` / ``s``: length(s) of the transformed axes; the input is cropped or zero-padded at the end
  (``s[i] == -1`` keeps that axis' length). ``irfft``'s and ``hfft``'s default ``n`` is
  ``2 * (m - 1)``. Bools are not lengths (TypeError). As numpy 2 does, ``s`` holding None (the 1-D
  default length there) and ``s`` without ``axes`` in the n-D transforms (the last ``len(s)`` axes)
  give a DeprecationWarning.
- ``norm``: ``"backward"`` (default: no scaling forward, ``1/n`` inverse), ``"ortho"`` (``1/sqrt(n)``
  both ways) or ``"forward"`` (``1/n`` forward); the factor is rounded once to float32.
- ``out``: an array of the result's kind, dtype (complex64; float32 for ``irfft*`` and ``hfft``) and
  shape to write into; it is returned.
- ``dtype`` (keyword-only): the split scheme, a name from :func:`splitprec.dtypes`; the default is
  :func:`splitprec.default_scheme`'s for float32 data (unless set, ``cheapest("fp32")``: ``bf16x6``).

Inputs are float32 or complex64 arrays of any library (numpy, cupy, or any DLPack object; the
result is of the input's kind); float16 and bfloat16 are widened exactly, and integers, bools and
Python numbers are taken where float32 holds them exactly (:mod:`splitprec.interop`); float64 and
complex128 arrays raise TypeError rather than being rounded silently (convert with ``.astype``).
``rfft`` and ``ihfft`` reject complex input (numpy 2 does too). numpy arrays run on the CPU engine,
cupy arrays on the GPU, with the same arithmetic (:mod:`splitprec.engines.reference.fft` documents it:
Stockham passes of radix 16, 8, 4, 2, 9, 7, 5, 3, each pass one split-precision product by the real
``2r x 2r`` DFT block; twiddles in float64 rounded to complex64; lengths from 4097 to 2**24 in two
steps of at most 4096 where they split; Bluestein for other prime factors). ``rfft`` and ``irfft`` of
even ``n`` run one complex transform of length ``n / 2`` on the packed pairs ``x[2j] + i x[2j+1]`` and
a complex64 pre- or post-processing step (``accuracy.rfft_bound``); odd ``n`` runs the complex
transform of length ``n``. ``hfft`` is ``irfft`` of the conjugate input with the opposite ``norm``,
``ihfft`` the conjugate of ``rfft`` (exact conjugations); the n-D transforms are 1-D transforms over
``axes``, the real axis (the last of ``axes``) first forward and last inverse.

scipy.fft backend: ``with scipy.fft.set_backend(splitprec.fft): scipy.fft.fft(x)`` runs here for
float32/complex64 numpy or cupy input (see :func:`__ua_function__`) and leaves the rest to scipy.

Dask arrays: each function takes a dask array ``a`` whose transformed axes are one chunk each and
returns a dask array, every block transformed alike; ``fftconvolve`` takes a dask ``in1`` and a
numpy/cupy kernel ``in2``, chunked convolved axes by overlap where the kernel is no longer than
every chunk (:mod:`splitprec.dask`, docs/dask.md).

Non-finite values: a 1-D line (along a transformed axis) that holds NaN or ±inf gives NaN in every
output of that line (both components); numpy's pocketfft gives a mix of ±inf and NaN there that
depends on its factorization, so only the pattern ``isfinite(out)`` matches numpy's, not the values.
Finite inputs whose transform overflows float32 give ±inf/NaN as float32 arithmetic does; an output
is never ±inf where no exact output of its line can reach the float32 overflow threshold (each
component is limited to ``|norm factor| * sum(|x|)`` of its line, and in the n-D transforms to
``sum(|x|)`` over all transformed axes: :mod:`splitprec.engines.limit`, docs/bounds.md).

Accuracy: ``accuracy.fft_bound(x, dtype)`` (docs/bounds.md), checked by
``tests/test_fft.py::test_fft_error_within_bound``; the fp32-class schemes stay within 2x a float32
FFT's error (scipy.fft's single-precision pocketfft on the CPU, cuFFT on the GPU; docs/kernels.md);
the rest of the family in ``tests/test_fft_family.py``.
"""
from __future__ import annotations

import functools
import numbers
import operator
import os
import warnings
from collections.abc import Sequence
from typing import Literal, Optional

import numpy as np

from . import _plans
from ._backend import dask_layer, is_dask
from ._fft_helpers import fftfreq, fftshift, ifftshift, next_fast_len, rfftfreq
from ._fft_lines import axis_index, check_norm, conjugate, length, operand, scheme, swapped_norm, transform
from ._fftconvolve import fftconvolve as _fftconvolve
from .dtypes import SchemeLike
from .engines.limit import limit, modulus_sum, saturated
from .interop import Array, ArrayLike, read, write

_TRANSFORMS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
               "fftn", "ifftn", "rfftn", "irfftn")
__all__ = [*_TRANSFORMS, "fftfreq", "rfftfreq", "fftshift", "ifftshift", "next_fast_len", "fftconvolve"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

Norm = Optional[Literal["backward", "ortho", "forward"]]
Lengths = Optional[Sequence[Optional[int]]]


def _raw_fft(a, n, axis, *, norm, out, dtype, inverse, kind, op, hermitian=False):
    """A 1-D transform (``kind``: c2c, r2c, c2r); ``hermitian``: ``hfft``/``ihfft``, which conjugate
    the input (c2r) or the output (r2c) and take the opposite ``norm``. Cupy calls go through the
    plan cache (:mod:`splitprec._plans`)."""
    tracked = getattr(type(a), "__splitprec_fft__", None)         # splitprec.tracking's arrays
    if tracked is not None:
        return tracked(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=inverse, kind=kind, op=op,
                       hermitian=hermitian)
    run = functools.partial(_fft1, n=n, axis=axis, norm=norm, out=out, dtype=dtype, inverse=inverse, kind=kind,
                            op=op, hermitian=hermitian)
    if out is not None:
        return run(a)
    return _plans.planned(op, (a,), (n, axis, norm, dtype, inverse, kind, hermitian), run)


def _fft1(a, n, axis, *, norm, out, dtype, inverse, kind, op, hermitian):
    d = scheme(dtype, op)
    (x,), back = read(op, a=a)
    x = operand(x, op, real=kind == "r2c")
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0, msg_prefix=op)
    axis = axis_index(axis, x.ndim, op)
    n = length(n, 2 * (x.shape[axis] - 1) if kind == "c2r" else x.shape[axis], op)
    norm = swapped_norm(norm) if hermitian else check_norm(norm)
    if hermitian and kind == "c2r":
        x = conjugate(x)
    y = transform(x, n, axis, norm=norm, inverse=inverse, kind=kind, d=d)
    return write(back(conjugate(y) if hermitian and kind == "r2c" else y), out, op)


def _warn_deprecated(s, axes, op):
    """numpy 2's DeprecationWarnings for ``s`` without ``axes`` and for None in ``s``, pointing at
    the caller of the public transform."""
    if s is None:
        return
    if axes is None:
        warnings.warn(f"`axes` should not be `None` if `s` is not `None` (deprecated in NumPy 2.0; "
                      f"splitprec follows numpy): {op} transforms the last {len(s)} axes; pass "
                      f"axes={tuple(range(-len(s), 0))} to keep that without this warning",
                      DeprecationWarning, stacklevel=5)
    if any(n is None for n in s):
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0: "
                      f"{op} takes None as the 1-D transform's default length; pass that length (or "
                      "-1 for the input's) instead", DeprecationWarning, stacklevel=5)


def _nd_args(x, s, axes, op, *, inverse_real):
    """numpy 2's ``(s, axes)``: all axes (or, deprecated, the last ``len(s)``); ``-1`` keeps an
    axis' length, None (deprecated) takes the 1-D default (``2 * (m - 1)`` on the last axis of an
    inverse real transform, as when ``s`` is not given)."""
    axes = range(x.ndim) if axes is None and s is None else range(-len(s), 0) if axes is None else axes
    axes = [axis_index(ax, x.ndim, op) for ax in axes]
    s = [None] * len(axes) if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError(f"{op}: s and axes have different lengths: s={s!r}, axes={axes!r}")
    defaults = [x.shape[ax] for ax in axes]
    if inverse_real and axes:
        defaults[-1] = 2 * (x.shape[axes[-1]] - 1)
    return [length(x.shape[ax] if n == -1 else n, default, op, "s")       # -1 on an empty axis: 0, refused
            for n, default, ax in zip(s, defaults, axes)], axes


def _raw_fftn(a, s, axes, *, norm, out, dtype, inverse, real, op):
    """An n-D transform: complex 1-D transforms over ``axes``, last first; ``real``: the last of
    ``axes`` is the real axis (rfft first forward, irfft last inverse)."""
    tracked = getattr(type(a), "__splitprec_fft__", None)
    if tracked is not None:
        return tracked(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=inverse,
                       kind="nd-real" if real else "nd", op=op, hermitian=False)
    _warn_deprecated(s, axes, op)
    run = functools.partial(_fftn, s=s, axes=axes, norm=norm, out=out, dtype=dtype, inverse=inverse, real=real,
                            op=op)
    if out is not None:
        return run(a)
    return _plans.planned(op, (a,), (s, axes, norm, dtype, inverse, real), run)


def _fftn(a, s, axes, *, norm, out, dtype, inverse, real, op):
    d = scheme(dtype, op)
    (read_a,), back = read(op, a=a)
    x = operand(read_a, op, real=real and not inverse)
    s, axes = _nd_args(x, s, axes, op, inverse_real=real and inverse)
    if real and not axes:
        raise ValueError(f"{op}: axes is empty; expected at least one axis (the real one)")
    check_norm(norm)
    if not axes:            # nothing to transform: the input's values and dtype, as numpy's and scipy's
        return write(back(x.copy() if np.iscomplexobj(read_a.array) else x.real.copy()), out, op)
    kinds = ["c2c"] * len(axes)
    if real:
        kinds[-1] = "c2r" if inverse else "r2c"
    # Over distinct axes, every partial transform's outputs are bounded by the input's modulus sum
    # over all of them (twice that of the half spectrum for the real inverse), so each pass is
    # limited to it: an output rounded past float32's top in one pass is not NaN in the next.
    distinct = len(set(axes)) == len(axes)
    ceiling = limit(modulus_sum(x, tuple(axes)) * (2 if real and inverse else 1)) if distinct and axes else None
    steps = list(zip(s, axes, kinds))
    for n, axis, kind in steps if real and inverse else steps[::-1]:
        x = transform(x, n, axis, norm=norm, inverse=inverse, kind=kind, d=d)
        x = x if ceiling is None else saturated(x, ceiling)
    return write(back(x), out, op)



def _dask_aware(function):
    """``function`` that also takes dask arrays: then every block runs ``function``
    (:func:`splitprec.dask.fft`: transformed axes one chunk each). The check comes first, so a
    dask array is never read (computed) as one array."""
    @functools.wraps(function)
    def public(*args, **kwargs):
        if any(is_dask(x) for x in (*args, *kwargs.values())):
            return dask_layer().fft(public, function, args, kwargs)
        return function(*args, **kwargs)
    return public


fftconvolve = _dask_aware(_fftconvolve)

@_dask_aware
def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
        dtype: SchemeLike = None) -> Array:
    """1-D discrete Fourier transform (``numpy.fft.fft``) in a split-precision scheme.

    Parameters
    ----------
    a : array (numpy, cupy, any DLPack object) or nested list, complex64 or float32
        Input; see the module docstring for ``n``, ``axis``, ``norm``, ``out``, ``dtype``.

    Returns
    -------
    complex64 array of the input's kind, the transformed axis of length ``n``.

    Raises
    ------
    TypeError
        float64/complex128 input, integers float32 cannot hold, non-integer or bool ``n`` or
        ``axis``, ``out`` of another dtype.
    ValueError
        ``n < 1``, unknown ``norm`` or scheme, ``out`` of another shape.
    numpy.exceptions.AxisError
        ``axis`` out of range (a ValueError and an IndexError).

    Accuracy: ``accuracy.fft_bound(x, dtype)``, checked by
    ``tests/test_fft.py::test_fft_error_within_bound``.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> sp.fft.fft(np.complex64([0, 1, 0, 0]))
    array([ 1.+0.j,  0.-1.j, -1.+0.j,  0.+1.j], dtype=complex64)
    """
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=False, kind="c2c", op="fft")


@_dask_aware
def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
         dtype: SchemeLike = None) -> Array:
    """1-D inverse transform (``numpy.fft.ifft``); parameters and accuracy as :func:`fft`."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=True, kind="c2c", op="ifft")


@_dask_aware
def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
         dtype: SchemeLike = None) -> Array:
    """1-D transform of real float32 input (``numpy.fft.rfft``): ``n // 2 + 1`` complex64 outputs."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=False, kind="r2c", op="rfft")


@_dask_aware
def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
          dtype: SchemeLike = None) -> Array:
    """Inverse of :func:`rfft` (``numpy.fft.irfft``): float32 output of length ``n``."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=True, kind="c2r", op="irfft")


@_dask_aware
def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
         dtype: SchemeLike = None) -> Array:
    """Transform of a Hermitian-symmetric signal given by its first half (``numpy.fft.hfft``): the
    real float32 spectrum of length ``n``, as ``irfft(conj(a))`` with the opposite ``norm``."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=True, kind="c2r", op="hfft",
                    hermitian=True)


@_dask_aware
def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, out: Array | None = None, *,
          dtype: SchemeLike = None) -> Array:
    """Inverse of :func:`hfft` (``numpy.fft.ihfft``): ``conj(rfft(a))`` with the opposite ``norm``."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=False, kind="r2c", op="ihfft",
                    hermitian=True)


@_dask_aware
def fftn(a: ArrayLike, s: Lengths = None, axes: Sequence[int] | None = None, norm: Norm = None,
         out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """N-D transform (``numpy.fft.fftn``): 1-D transforms over ``axes``, last axis first."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, real=False, op="fftn")


@_dask_aware
def ifftn(a: ArrayLike, s: Lengths = None, axes: Sequence[int] | None = None, norm: Norm = None,
          out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """N-D inverse transform (``numpy.fft.ifftn``)."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, real=False, op="ifftn")


@_dask_aware
def rfftn(a: ArrayLike, s: Lengths = None, axes: Sequence[int] | None = None, norm: Norm = None,
          out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """N-D transform of real input (``numpy.fft.rfftn``): ``rfft`` over the last of ``axes`` (which
    keeps ``s[-1] // 2 + 1`` outputs), then ``fft`` over the others."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, real=True, op="rfftn")


@_dask_aware
def irfftn(a: ArrayLike, s: Lengths = None, axes: Sequence[int] | None = None, norm: Norm = None,
           out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """Inverse of :func:`rfftn` (``numpy.fft.irfftn``): ``ifft`` over all but the last of ``axes``,
    then ``irfft`` over it (default length ``2 * (m - 1)``); float32 output."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, real=True, op="irfftn")


@_dask_aware
def fft2(a: ArrayLike, s: Lengths = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
         out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """2-D transform (``numpy.fft.fft2``): :func:`fftn` over the last two axes."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, real=False, op="fft2")


@_dask_aware
def ifft2(a: ArrayLike, s: Lengths = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
          out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """2-D inverse transform (``numpy.fft.ifft2``)."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, real=False, op="ifft2")


@_dask_aware
def rfft2(a: ArrayLike, s: Lengths = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
          out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """2-D transform of real input (``numpy.fft.rfft2``): :func:`rfftn` over the last two axes."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, real=True, op="rfft2")


@_dask_aware
def irfft2(a: ArrayLike, s: Lengths = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
           out: Array | None = None, *, dtype: SchemeLike = None) -> Array:
    """Inverse of :func:`rfft2` (``numpy.fft.irfft2``): :func:`irfftn` over the last two axes."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, real=True, op="irfft2")


# -- scipy.fft backend (uarray protocol) -----------------------------------------------------------

__ua_domain__ = "numpy.scipy.fft"
_SCIPY_ONE_D = ("x", "n", "axis", "norm", "overwrite_x", "workers")
_SCIPY_N_D = ("x", "s", "axes", "norm", "overwrite_x", "workers")
_REAL_INPUT = frozenset(["rfft", "ihfft", "rfft2", "rfftn"])


def __ua_function__(method, args, kwargs):
    """scipy.fft's backend hook, for ``scipy.fft.set_backend(splitprec.fft)``: scipy.fft's
    ``method`` runs here when splitprec has it and ``x`` is a numpy or cupy array of float32 or
    complex64 (float32 only for ``rfft*`` and ``ihfft``), with scipy's ``n``/``s``, ``axis``/``axes``
    (scipy's rules for them: :func:`_scipy_nd_args`) and ``norm``; ``overwrite_x``
    is accepted and ignored, ``workers`` checked as scipy checks it (an int or a bool, not 0 and not
    below ``-os.cpu_count()``) and then ignored. Anything else (other dtypes, lists, ``plan=``, the
    transforms splitprec lacks: dct, dst, hfftn, fht, ...) returns NotImplemented, so scipy runs
    its next backend."""
    ours = globals()[method.__name__] if method.__name__ in _TRANSFORMS else None
    names = _SCIPY_N_D if method.__name__.endswith(("n", "2")) else _SCIPY_ONE_D
    if ours is None or len(args) > len(names) or kwargs.get("plan") is not None:
        return NotImplemented
    params = dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k != "plan"}
    x = params.pop("x", None)
    kinds = ("f",) if method.__name__ in _REAL_INPUT else ("f", "c")
    if not (type(x) is np.ndarray or type(x).__module__.split(".")[0] == "cupy") or \
            x.dtype not in (np.float32, np.complex64) or x.dtype.kind not in kinds or \
            not set(params) <= set(names[1:]):
        return NotImplemented
    params.pop("overwrite_x", None)
    _check_workers(params.pop("workers", None), method.__name__)
    if names is _SCIPY_N_D:
        _scipy_nd_args(params, x.ndim, method.__name__)
    return ours(x, **params)


def _scipy_nd_args(params, ndim, op):
    """scipy.fft's rules for ``s`` and ``axes`` of the n-D transforms, applied to ``params``: a
    scalar is a one-element sequence, and anything but integers in them is a ValueError; ``s``
    without ``axes`` means the last ``len(s)`` axes in ``*fftn`` (``*fft2`` keep their ``(-2, -1)``);
    repeated axes raise ValueError (numpy allows them)."""
    for key in [key for key in ("s", "axes") if params.get(key) is not None]:
        if isinstance(params[key], numbers.Number):
            params[key] = (params[key],)
        try:
            params[key] = tuple(map(operator.index, params[key]))
        except TypeError:
            raise ValueError(f"{op}: {key}={params[key]!r} is not a sequence of integers; expected "
                             f"integers (scipy.fft's rule)") from None
    if params.get("s") is not None and params.get("axes") is None and op.endswith("n"):
        params["axes"] = tuple(range(-len(params["s"]), 0))
    axes = tuple(params.get("axes") or ())
    within = [ax % ndim for ax in axes if isinstance(ax, numbers.Integral) and -ndim <= ax < ndim]
    if len(set(within)) != len(within):
        raise ValueError(f"{op}: axes={axes!r} repeats an axis; expected unique axes (scipy.fft's rule)")


def _check_workers(workers, op):
    """scipy.fft's rule for ``workers``: None, or an integer, nonzero and not below
    ``-os.cpu_count()``. Bools are integers to scipy (``True`` is 1; ``False`` is 0, refused), numpy's
    included: its C++ layer converts ``numpy.bool_`` by ``int()``, which ``operator.index`` refuses."""
    if workers is None:
        return
    try:
        count = int(workers) if isinstance(workers, np.bool_) else operator.index(workers)
    except TypeError:
        raise TypeError(f"{op}: workers must be an int, got {workers!r} of type "
                        f"{type(workers).__name__}") from None
    if count == 0 or count < -(os.cpu_count() or 1):
        raise ValueError(f"{op}: workers={workers!r} is out of range; expected a positive int, or a "
                         f"negative one down to -os.cpu_count() = {-(os.cpu_count() or 1)} (scipy's rule)")
