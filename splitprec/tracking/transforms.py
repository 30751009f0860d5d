"""FFTs of tracked arrays: ``splitprec.fft.fft``, ``ifft``, ``rfft``, their ``2`` and ``n`` forms (and numpy.fft's names).

The value is the splitprec transform of the computed input ``x^`` along ``axis``. Per line, with
``beta`` the normwise bound :func:`splitprec.accuracy.fft_bound` (``rfft_bound`` for ``rfft``; the
probabilistic one in that mode) and ``c`` the norm factor (docs/tracking.md, "FFTs"), every output
entry obeys

    ``|y^_k - c F(x)_k| <= beta c sqrt(n) ||x^||_2 + c sum_j E_j``:

the first term because one entry's error is at most the line's 2-norm error and ``||c F(x^)||_2 =
c sqrt(n) ||x^||_2`` (``rfft`` keeps half of it), the second because every entry of ``F`` has
modulus 1. ``n`` crops or zero-pads the tracked input first (the padding is exact). The ``2`` and
``n`` transforms are these 1-D transforms over their axes, last first, as splitprec.fft runs them.
On cupy storage ``beta``, one number per line, is computed from a host copy of the input; the rest
on the device. ``irfft``, ``irfft2``, ``irfftn`` and the ``h`` transforms have no tracked rule (TypeError).
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


def _transform_nd(a, s, axes, *, norm, dtype, inverse, real, op):
    """The n-D transform ``op``: tracked 1-D transforms over ``axes``, last first (the real axis first),
    as splitprec.fft runs them, each step's bound propagated by the next."""
    from ..fft import _nd_args
    lengths, axes = _nd_args(a, s, axes, op, inverse_real=False)
    if real and not axes:
        raise ValueError(f"{op}: axes is empty; expected at least one axis (the real one)")
    steps = list(zip(lengths, axes))[::-1]
    for i, (n, axis) in enumerate(steps):
        a = transform(a, n, axis, norm=norm, out=None, dtype=dtype, inverse=inverse,
                      kind="r2c" if real and i == 0 else "c2c", op=op, hermitian=False)
    return a


def transform(a, n, axis, *, norm, out, dtype, inverse, kind, op, hermitian):
    """The transform ``op`` of TrackedArray ``a`` (module docstring); ``kind`` "nd" and "nd-real" are
    the n-D transforms, ``n`` and ``axis`` then their ``s`` and ``axes``."""
    if kind.startswith("nd") and out is None and not (kind == "nd-real" and inverse):
        return _transform_nd(a, n, axis, norm=norm, dtype=dtype, inverse=inverse, real=kind == "nd-real", op=op)
    name = _SUPPORTED.get((kind, inverse))
    if name is None or hermitian or out is not None:
        raise TypeError(f"{op}: no tracked rule (or out= given); tracked arrays take fft, ifft, rfft and "
                        "their 2-D and n-D forms with out=None (for a real inverse take ifft(...).real)")
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


def _numpy_transform_nd(name, inverse, real, axes):
    def apply(a, s=None, axes=axes, norm=None, out=None):
        if out is not None:
            raise TypeError(f"{name}: out is not supported for tracked arrays; expected out=None")
        return _transform_nd(a, s, axes, norm=norm, dtype=None, inverse=inverse, real=real, op=name)
    return apply


for (_kind, _inverse), _name in _SUPPORTED.items():
    implements(getattr(np.fft, _name))(_numpy_transform(_name, _kind, _inverse))
for _name, _inverse, _real, _axes in (("fft2", False, False, (-2, -1)), ("ifft2", True, False, (-2, -1)),
                                      ("rfft2", False, True, (-2, -1)), ("fftn", False, False, None),
                                      ("ifftn", True, False, None), ("rfftn", False, True, None)):
    implements(getattr(np.fft, _name))(_numpy_transform_nd(_name, _inverse, _real, _axes))
