"""FFTs of tracked arrays: ``splitprec.fft.fft``, ``ifft`` and ``rfft`` (and numpy.fft's names).

The value is the splitprec transform of the computed input ``x^`` along ``axis``. Per line, with
``beta`` the normwise bound :func:`splitprec.accuracy.fft_bound` (``rfft_bound`` for ``rfft``; the
probabilistic one in that mode) and ``c`` the norm factor (docs/tracking.md, "FFTs"), every output
entry obeys

    ``|y^_k - c F(x)_k| <= beta c sqrt(n) ||x^||_2 + c sum_j E_j``:

the first term because one entry's error is at most the line's 2-norm error and ``||c F(x^)||_2 =
c sqrt(n) ||x^||_2`` (``rfft`` keeps half of it), the second because every entry of ``F`` has
modulus 1. ``n`` crops or zero-pads the tracked input first (the padding is exact). On cupy storage
``beta``, one number per line, is computed from a host copy of the input; the rest on the device.
``irfft`` and the ``h``, ``2`` and ``n`` transforms have no tracked rule (TypeError).
"""
import numpy as np

from .._backend import namespace
from .._fft_lines import _norm_factor, axis_index, length
from .core import TrackedArray, implements
from .rounding import magnitude, rounded_up, unknown_where_not_finite

_SUPPORTED = {("c2c", False): "fft", ("c2c", True): "ifft", ("r2c", False): "rfft"}


def _resized(v, n, xp):
    """``v`` cropped or zero-padded to length ``n`` on its last axis."""
    if v.shape[-1] >= n:
        return v[..., :n]
    pad = xp.zeros(v.shape[:-1] + (n - v.shape[-1],), v.dtype)
    return xp.concatenate([v, pad], axis=-1)


def _line_factor(v, d, name, norm, confidence, xp):
    """``beta`` per line (shape ``v.shape[:-1] + (1,)``) on ``v``'s device."""
    from .. import accuracy
    host = v if xp is np else v.get()
    engine = "cpu" if xp is np else "gpu"
    kind = "rigorous" if confidence is None else "probabilistic"
    options = dict(norm=norm, kind=kind, confidence=confidence or 0.5)      # (ignored when rigorous)
    if name == "rfft":
        beta = accuracy.rfft_bound(host, d, engine, **options)
    else:
        beta = accuracy.fft_bound(host, d, engine, inverse=name == "ifft", **options)
    return xp.asarray(np.asarray(beta, dtype=np.float64)).reshape(v.shape[:-1] + (1,))


def transform(a, n, axis, *, norm, out, dtype, inverse, kind, op, hermitian):
    """The 1-D transform ``op`` of TrackedArray ``a`` (module docstring)."""
    name = _SUPPORTED.get((kind, inverse))
    if name is None or hermitian or out is not None:
        raise TypeError(f"{op}: no tracked rule (or out= given); tracked arrays take fft, ifft and rfft "
                        "with out=None (for a real inverse take ifft(...).real)")
    if name == "rfft" and a.is_complex:
        raise TypeError(f"{op}: a has complex64 values; expected real (float32) input, as numpy 2")
    from .. import fft
    from ..array.convert import scheme
    d = a._dtype if dtype is None else scheme(dtype, op)
    xp = namespace(a._value)
    axis = axis_index(axis, a.ndim, op)
    n = length(n, a.shape[axis], op)
    c = _norm_factor(norm, n, inverse) * (1 + 2.0 ** -52)
    v, e = (_resized(xp.moveaxis(w, axis, -1), n, xp) for w in (a._value, a._bound))
    y = getattr(fft, name)(xp.ascontiguousarray(v), axis=-1, norm=norm, dtype=d)
    with np.errstate(over="ignore", invalid="ignore"):
        beta = _line_factor(v, d, name, norm, a._confidence, xp)
        size = (1 + (n + 8) * 2.0 ** -52)
        norms = xp.sqrt(xp.sum(magnitude(v, xp) ** 2, axis=-1, keepdims=True) * size) * size
        spread = xp.sum(e, axis=-1, keepdims=True) * size
        bound = beta * c * np.sqrt(n) * (1 + 2.0 ** -52) * norms + c * spread
        bound = unknown_where_not_finite(rounded_up(xp.broadcast_to(bound, y.shape), xp), y, xp)
    return TrackedArray._wrap(xp.moveaxis(y, -1, axis), xp.moveaxis(bound, -1, axis), d, a._confidence)


def _numpy_transform(name, kind, inverse):
    def apply(a, n=None, axis=-1, norm=None, out=None):
        return transform(a, n, axis, norm=norm, out=out, dtype=None, inverse=inverse, kind=kind,
                         op=name, hermitian=False)
    return apply


for (_kind, _inverse), _name in _SUPPORTED.items():
    implements(getattr(np.fft, _name))(_numpy_transform(_name, _kind, _inverse))
