"""One transform along one axis of a checked array, and the checks of numpy.fft's parameters.

What :mod:`splitprec.fft` and :func:`splitprec.fft.fftconvolve` share: the scheme, the operands
(through :mod:`splitprec.interop`), ``axis``, ``n``, ``norm`` and ``out``, and :func:`transform`,
which runs the engine on the lines along an axis with numpy's crop/zero-pad, scaling and NaN lines.
"""
import math
import operator

import numpy as np

from .engines.cuda import fft as cuda_fft
from .engines.reference import fft as reference_fft
from ._backend import namespace
from ._defaults import resolve
from .interop import exact

_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def scheme(dtype, op):
    """The scheme of a transform: ``dtype``, or the float32 default (``splitprec.default_scheme``)."""
    d = resolve(dtype, None, target="float32", op=op)
    if d.target != "float32":
        raise ValueError(f"{op}: scheme {d.name!r} targets {d.target}; the FFT supports float32 targets")
    return d


def operand(x, op, *, real, name="a"):
    """An :class:`splitprec.interop.Operand` as a float32 (``real``) or complex64 array, or a
    TypeError naming it (the value policy of :mod:`splitprec.interop`)."""
    x = exact(x, op, name, target="float32", complex_ok=not real)
    return x if real else x.astype(np.complex64, copy=False)


def axis_index(axis, ndim, op):
    """``axis`` as an index in ``[0, ndim)``; TypeError for non-integers, AxisError out of range."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, msg_prefix=op)
    return axis % ndim


def length(n, default, op, name="n"):
    """A transform length: ``n``, or ``default`` for None; TypeError for bools and non-integers
    (as numpy: a bool is not a length), ValueError below 1."""
    if n is None:
        n = default
    elif isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got {n!r} (a bool is not a length)")
    else:
        try:
            n = operator.index(n)
        except TypeError:
            raise TypeError(f"{op}: {name} must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified for {op}; "
                         "expected an integer >= 1")
    return n


def swapped_norm(norm):
    """The ``norm`` of the opposite direction (``hfft`` is ``irfft`` with it), after checking it."""
    check_norm(norm)
    return _SWAP[_NORMS[norm]]


def check_norm(norm):
    """``norm`` itself if numpy.fft accepts it, else a ValueError (numpy's message)."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    return norm


def _norm_factor(norm, n, inverse):
    check_norm(norm)
    norm = _SWAP[_NORMS[norm]] if inverse else _NORMS[norm]
    return {"backward": 1.0, "ortho": 1 / np.sqrt(n), "forward": 1.0 / n}[norm]


def _resize(x, n, xp):
    """Crop or zero-pad the last axis of ``x`` to ``n``."""
    if x.shape[-1] >= n:
        return x[..., :n]
    padded = xp.zeros(x.shape[:-1] + (n,), x.dtype)
    padded[..., :x.shape[-1]] = x
    return padded


def nonfinite_lines(x, xp):
    """Mask ``(..., 1)`` of the lines of ``x`` that hold NaN or ±inf.

    Lines of ``2**16`` values or more are reduced in up to 1024 pieces first: a reduction along the
    last axis runs one GPU block per output, which takes milliseconds for one line of ``2**24``.
    """
    n = x.shape[-1]
    pieces = math.gcd(n, 1024) if n >= 1 << 16 else 1
    finite = xp.isfinite(x).reshape(x.shape[:-1] + (pieces, n // pieces)).all(axis=-1)
    return ~finite.all(axis=-1, keepdims=True)


def nan_where(bad, y, xp):
    """``y`` with NaN (NaN + NaN i for complex) in the lines that ``bad`` marks."""
    return xp.where(bad, y.dtype.type(complex(np.nan, np.nan) if y.dtype.kind == "c" else np.nan), y)


def _without_ignored_parts(c, n, xp):
    """A copy of the half spectrum ``c`` with the imaginary parts that ``irfft`` ignores (bin 0's and,
    for even ``n``, bin ``n // 2``'s) zeroed, so that NaN/inf there does not make the line NaN (numpy
    ignores them whatever their value)."""
    c = xp.array(c, dtype=np.complex64, order="C")
    pairs = c.view(np.float32)
    pairs[..., 1] = 0
    if n % 2 == 0:
        pairs[..., n + 1] = 0
    return c


def engine(xp):
    """The FFT engine of arrays of module ``xp``: the reference engine for numpy, CUDA for cupy."""
    return reference_fft if xp is np else cuda_fft


def conjugate(x):
    """The exact complex conjugate of complex64 ``x`` by its engine (subnormals kept on every device)."""
    return engine(namespace(x)).conjugate(x)


def _line(x, n, *, kind, inverse, d, factor, nonfinite=None):
    """The 1-D transform of the last axis of ``x`` (already resized) times the norm ``factor``, which
    the engine applies at its power-of-two line scale; ``nonfinite``: as
    :func:`splitprec.engines.cuda.fft.forward`."""
    lines = engine(namespace(x))
    if kind == "c2r":
        return lines.real_inverse(x, n, d, nonfinite, factor)
    if kind == "r2c":
        return lines.real_forward(x, d, nonfinite, factor)
    if inverse:
        return lines.inverse(x, d, nonfinite, factor)
    return lines.forward(x, d, nonfinite=nonfinite, factor=factor)


def transform(x, n, axis, *, norm, inverse, kind, d):
    """One 1-D transform along ``axis`` of a checked array (``kind``: c2c, r2c, c2r).

    A line holding NaN or ±inf comes out all NaN. On the GPU the kernel that first reads the data
    flags NaN/inf and a fix-up launch sets those lines after the transform, so the call never waits
    for the device; on the CPU non-finite lines are found first, transformed as zeros and set to NaN.
    """
    xp = namespace(x)
    x = _resize(xp.moveaxis(x, axis, -1), n // 2 + 1 if kind == "c2r" else n, xp)
    if kind == "c2r":
        x = _without_ignored_parts(x, n, xp)
    factor = _norm_factor(norm, n, inverse)
    if xp is not np:
        x = xp.ascontiguousarray(x)
        flag = xp.zeros(1, np.uint32)
        y = _line(x, n, kind=kind, inverse=inverse, d=d, factor=factor, nonfinite=flag)
        y = cuda_fft.nan_flagged_lines(x, y, flag)
    else:
        bad = nonfinite_lines(x, xp)
        any_bad = bool(bad.any())
        y = _line(xp.where(bad, x.dtype.type(0), x) if any_bad else x, n, kind=kind, inverse=inverse, d=d,
                  factor=factor)
        if any_bad:
            y = nan_where(bad, y, xp)
    return xp.moveaxis(y, -1, axis)


