"""Elementwise operations on tracked arrays: their values and their error bounds.

Members: ``+ - * /`` (``add subtract multiply divide``), ``negative positive absolute conjugate``, ``sqrt
exp log sin cos``, ``maximum minimum``, ``where``; comparisons and ``isfinite isnan isinf`` give
plain bool arrays of the computed values (a branch on them is the caller's, ``where`` takes it as
given). With exact operands ``a, b`` within ``E_a, E_b`` of the computed ``a^, b^`` (docs/tracking.md,
"Elementwise"), the propagated part of each bound is

- ``a + b``, ``a - b``: ``E_a + E_b``; ``a * b``: ``|a^| E_b + E_a (|b^| + E_b)``;
- ``a / b``: ``(|a^| E_b + |b^| E_a) / (|b^| (|b^| - E_b))``, inf unless ``E_b < |b^|``;
- ``sqrt``: ``E / sqrt(a^)``, inf unless ``E <= a^``; ``exp``: ``exp(a^) expm1(E)``;
  ``log``: ``r / (1 - r)`` with ``r = E / a^`` (``>= -log1p(-r)``), inf unless ``E < a^``;
  ``sin``, ``cos``: ``min(E, 2)``, unknown where ``E`` is;
- ``-a``, ``|a|``, ``conj``, ``max``, ``min``, ``where``: the operands' bounds (these are 1-Lipschitz);

plus the rounding of the result, ``U |value| + ETA`` (:mod:`splitprec.tracking.rounding`). On the
CPU ``+ - * / sqrt`` and ``maximum minimum`` are numpy's float32 operations (correctly rounded,
the untracked values bit for bit); transcendental functions, complex arithmetic and everything
on the GPU are evaluated in float64 (complex128) and rounded once (``LIBM`` covers the float64
function's own error, and ``sin``/``cos`` bounds of known arguments are capped at ``|value| +
1``). Large operations on the CPU run in blocks of ``BLOCK`` entries (the same arithmetic, entry
by entry); the rules write their temporaries in place, into one spare float64 array per operation.
"""
import math

import numpy as np

from ..formats import narrow, widen
from .core import UFUNCS, TrackedArray, context, implements
from .inputs import operand
from .rounding import LIBM, U, UP, magnitude, rounding_error

_FLOAT32_EXACT = frozenset([np.add, np.subtract, np.multiply, np.divide, np.sqrt, np.negative,
                            np.positive, np.absolute])        # IEEE: rounded once, or exact
_REAL_ONLY = frozenset([np.divide, np.sqrt, np.exp, np.log, np.sin, np.cos, np.maximum, np.minimum])
_WIDE_RELATIVE = U + 2.0 ** -50      # float64 (complex128) evaluation, then one rounding
BLOCK = 1 << 14                      # entries per block of a large operation on the CPU
_FLOAT64_TINY = 2.0 ** -1022          # float64's smallest normal
_LIBRARY = frozenset([np.exp, np.log, np.sin, np.cos, np.absolute])   # float64 library functions (hypot)


def _wide(v, xp):
    if xp is np:
        return v.astype(np.complex128 if v.dtype == np.complex64 else np.float64)
    if v.dtype == np.complex64:
        return widen(v.real.copy()) + 1j * widen(v.imag.copy())
    return widen(v)


def _narrow(w, xp):
    if xp is np:
        return w.astype(np.complex64 if w.dtype == np.complex128 else np.float32)
    if w.dtype == np.complex128:
        pairs = xp.stack([narrow(w.real.copy()), narrow(w.imag.copy())], axis=-1)
        return pairs.view(np.complex64)[..., 0]
    return narrow(w)


def _operands(inputs, op):
    like = next(x for x in inputs if isinstance(x, TrackedArray))
    arrays = [operand(x, op, f"operand {i}", like) for i, x in enumerate(inputs)]
    xp, d, confidence = context(arrays, op)
    shapes = [a.shape for a in arrays]
    try:
        shape = shapes[0] if len(set(shapes)) == 1 else np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{op}: operands of shapes {', '.join(map(str, shapes))} do not broadcast; "
                         "expected shapes compatible under numpy's rules") from None
    return arrays, xp, d, confidence, shape


def _evaluate(ufunc, arrays, xp, out=None):
    """``(value, wide result or None, relative rounding)`` of ``ufunc`` on the operands' values;
    ``out``: the array the value is written into (numpy), else a new one."""
    values = [a._value for a in arrays]
    if xp is np and ufunc in _FLOAT32_EXACT and all(v.dtype == np.float32 for v in values):
        return np.asarray(ufunc(*values, out=out)), None, U
    wide = xp.asarray(ufunc(*[_wide(v, xp) for v in values]))
    relative = _WIDE_RELATIVE + (LIBM if ufunc in _LIBRARY else 0)
    if out is None:
        return _narrow(wide, xp), wide, relative
    out[...] = wide                                           # numpy's cast: rounded once, to nearest
    return out, wide, relative


def _zero(bound):
    """True for the 0-d zero bound of an exact input (a broadcast view of one)."""
    return not bound.size or (bound.strides == (0,) * bound.ndim and not bool(bound[(0,) * bound.ndim]))


def _sum_rule(a, b, value, wide, xp, spare):
    if _zero(b._bound):
        return a._bound
    return b._bound if _zero(a._bound) else xp.add(a._bound, b._bound, out=spare)


def _modulus(x, xp, spare):
    """``|x^|`` in float64, written into ``spare`` where ``x`` has the result's shape."""
    return magnitude(x._value, xp, out=spare if x.shape == spare.shape else None)


def _product_rule(a, b, value, wide, xp, spare):
    """``|a^| E_b + E_a (|b^| + E_b)`` (a term whose bound is 0 left out)."""
    first = None if _zero(b._bound) else xp.multiply(_modulus(a, xp, spare), b._bound, out=spare)
    if _zero(a._bound):
        return first
    second = xp.multiply(a._bound, magnitude(b._value, xp) + b._bound, out=spare if first is None else None)
    return second if first is None else xp.add(first, second, out=spare)


def _quotient_rule(a, b, value, wide, xp, spare):
    """``(|a^| E_b + |b^| E_a) / (|b^| (|b^| - E_b))``, inf unless ``E_b < |b^|``."""
    mb = magnitude(b._value, xp)
    if _zero(b._bound):
        return xp.divide(a._bound, mb, out=spare)
    room = (mb - b._bound) * (1 - 2.0 ** -50)          # a lower bound of |b^| - E_b
    spread = xp.multiply(_modulus(a, xp, spare), b._bound, out=spare)
    spread += mb * a._bound
    spread /= mb * room
    xp.copyto(spread, np.inf, where=xp.logical_not(room > 0))
    return spread


def _sqrt_rule(a, b, value, wide, xp, spare):
    """``E / sqrt(a^)`` (``sqrt(a^) >= value / (1 + U)``), inf unless ``E <= a^``; 0 at ``E = a^ = 0``."""
    least = a._value.min()
    root = xp.multiply(value, 1 - 2.0 ** -23, out=spare, dtype=np.float64)    # value >= 0 (or NaN): |value|
    if not bool(least > 0):                                   # else value >= 2**-75 everywhere
        xp.maximum(root, 2.0 ** -1000, out=root)
    spread = xp.divide(a._bound, root, out=root)
    if not bool(a._bound.max() <= least):                     # else E <= a^ everywhere (both read exactly)
        xp.copyto(spread, np.inf, where=xp.logical_not(xp.less_equal(a._bound, a._value)))
    return spread


def _exp_rule(a, b, value, wide, xp, spare):
    """``exp(a^) expm1(E)``; ``expm1(E) <= E (1 + E)`` for ``E <= 1/2``. Where ``exp(a^)`` is below
    float64's normal range (its relative accuracy lost), ``exp(a^ + E) (1 + 2**-40) + 2**-1022``
    instead: ``e^(a^+E)`` bounds the spread, the factor covers the sum's rounding (``|a^ + E| < 746``
    there, or the result is 0 or inf anyway) and the function's, the term a subnormal result's.
    ``wide`` (``exp(a^)`` in float64, never negative) is overwritten."""
    e = a._bound
    if bool(e.max() <= 0.5):
        growth = xp.add(e, 1.0, out=spare)
        growth *= e
    else:
        growth = xp.expm1(e, out=spare)
        growth *= 1 + 2 * LIBM
    low = wide < _FLOAT64_TINY
    spread = xp.multiply(wide, 1 + 2 * LIBM, out=wide)
    spread *= growth
    if bool(low.any()):
        ceiling = xp.exp(a._value.astype(np.float64) + e) * (1 + 2.0 ** -40) + _FLOAT64_TINY
        xp.copyto(spread, ceiling, where=low)
    return spread


def _log_rule(a, b, value, wide, xp, spare):
    """``-log1p(-r) <= r / (1 - r)`` with ``r = E / a^``, inf unless ``0 <= r < 1``."""
    r = xp.divide(a._bound, a._value, out=spare)         # a^ widened: exact
    r *= 1 + 2.0 ** -52                                    # rounded up: 1 - r may cancel
    if bool(r.max() < 1) and bool(r.min() >= 0):          # everywhere (not where r has a NaN)
        return xp.divide(r, 1 - r, out=r)
    return xp.where((r < 1) & (r >= 0), r / (1 - r), np.inf)


def _lipschitz_rule(a, b, value, wide, xp, spare):
    """``min(E, 2)`` (sin, cos: 1-Lipschitz, ``|sin| <= 1``) where ``E`` is finite; unknown (NaN)
    where it is not, since the exact argument may not exist there (a divisor reaching 0)."""
    spread = xp.minimum(a._bound, 2.0, out=spare)
    xp.copyto(spread, np.nan, where=xp.logical_not(a._bound < np.inf))
    return spread


def _modulus_rule(a, b, value, wide, xp, spare):
    return a._bound                                          # complex |z|: ||z^| - |z|| <= |z^ - z|


RULES = {np.add: _sum_rule, np.subtract: _sum_rule, np.multiply: _product_rule, np.divide: _quotient_rule,
         np.sqrt: _sqrt_rule, np.exp: _exp_rule, np.log: _log_rule, np.sin: _lipschitz_rule,
         np.cos: _lipschitz_rule, np.absolute: _modulus_rule}


def _propagated(ufunc, arrays, value, wide, xp, spare):
    """The propagated part of the bound (module docstring), float64, NaN where unknowable; None
    where every operand's bound is 0 (then every rule gives 0, or the value is NaN or infinite and
    its rounding term says so). ``spare``: a float64 array of the result's shape that the rule may
    overwrite and return."""
    if all(_zero(a._bound) for a in arrays):
        return None
    return RULES[ufunc](arrays[0], arrays[-1], value, wide, xp, spare)


def _compute(ufunc, arrays, xp, out=None):
    """``(value, bound)`` of ``ufunc`` on tracked ``arrays`` (module docstring); ``out``: arrays of
    the result's shape that take the value and the bound, and a float64 one for the rule's
    temporary (numpy), else new ones."""
    out_value, out_bound, spare = (None, None, None) if out is None else out
    if ufunc in (np.maximum, np.minimum):                   # exact (in float64 on the GPU: no flush)
        value = ufunc(arrays[0]._value, arrays[1]._value, out=out_value) if xp is np else \
            _narrow(ufunc(*[_wide(a._value, xp) for a in arrays]), xp)
        return value, xp.maximum(arrays[0]._bound, arrays[1]._bound, out=out_bound)
    value, wide, relative = _evaluate(ufunc, arrays, xp, out_value)
    if ufunc in (np.negative, np.positive, np.conjugate) or (ufunc is np.absolute and not arrays[0].is_complex):
        if out_bound is None:
            return value, arrays[0]._bound                                       # exact
        out_bound[...] = arrays[0]._bound
        return value, out_bound
    bound = rounding_error(value, xp, relative, out=out_bound)
    spare = xp.empty(value.shape, np.float64) if spare is None else spare
    propagated = _propagated(ufunc, arrays, value, wide, xp, spare)
    if propagated is not None:
        bound += propagated
    if ufunc in (np.sin, np.cos):
        xp.minimum(bound, magnitude(value, xp, out=spare) + 1, out=bound)    # NaN (unknown) stays
    bound *= UP
    return value, bound


def _flat(x, shape):
    """``x`` for the blocks of a result of ``shape``: a flat view where it is C-contiguous of that
    shape, one 0-d value where all of it is one value (a scalar, a broadcast one), else None."""
    if x.strides == (0,) * x.ndim:
        return x[(0,) * x.ndim + (Ellipsis,)]
    if x.shape == shape and x.flags.c_contiguous:
        return x.reshape(-1)
    return None


def _blocked(ufunc, arrays, shape, d, confidence):
    """``_compute`` block by block over flat views (numpy storage), written straight into the
    result: the float64 temporaries of a block stay in cache, which makes a large operation several
    times faster; None where an operand is not such a view."""
    values = [_flat(a._value, shape) for a in arrays]
    bounds = [_flat(np.broadcast_to(a._bound, a.shape), shape) for a in arrays]
    if any(v is None for v in values + bounds):
        return None
    size = math.prod(shape)
    dtype = np.result_type(*[v.dtype for v in values]) if ufunc is not np.absolute else values[0].real.dtype
    out_value, out_bound, spare = np.empty(size, dtype), np.empty(size, np.float64), np.empty(BLOCK, np.float64)
    for start in range(0, size, BLOCK):
        block = slice(start, start + BLOCK)
        part = [TrackedArray._wrap(v if v.ndim == 0 else v[block], b if b.ndim == 0 else b[block], d, confidence)
                for v, b in zip(values, bounds)]
        _compute(ufunc, part, np, out=(out_value[block], out_bound[block], spare[:min(BLOCK, size - start)]))
    return TrackedArray._wrap(out_value.reshape(shape), out_bound.reshape(shape), d, confidence)


def _ufunc(ufunc):
    op = ufunc.__name__

    def apply(*inputs):
        arrays, xp, d, confidence, shape = _operands(inputs, op)
        if ufunc in _REAL_ONLY and any(a.is_complex for a in arrays):
            raise TypeError(f"{op}: tracked complex values are not supported here; expected real "
                            "(float32) TrackedArrays (complex values support + - * abs and the FFTs)")
        with np.errstate(all="ignore"):
            if xp is np and math.prod(shape) >= 4 * BLOCK:
                result = _blocked(ufunc, arrays, shape, d, confidence)
                if result is not None:
                    return result
            return TrackedArray._wrap(*_compute(ufunc, arrays, xp), d, confidence)
    return apply


def _plain(ufunc):
    """A comparison or test on the computed values: a plain bool array (module docstring)."""
    def apply(*inputs):
        values = [x._value if isinstance(x, TrackedArray) else x for x in inputs]
        return ufunc(*values)
    return apply


for _u in (np.add, np.subtract, np.multiply, np.divide, np.negative, np.positive, np.absolute, np.conjugate,
           np.sqrt, np.exp, np.log, np.sin, np.cos, np.maximum, np.minimum):
    UFUNCS[_u] = _ufunc(_u)
for _u in (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
           np.isfinite, np.isnan, np.isinf, np.signbit):
    UFUNCS[_u] = _plain(_u)


@implements(np.where)
def where(condition, x, y):
    """Entries of ``x`` where the bool array ``condition`` holds, else of ``y``, with their bounds."""
    if isinstance(condition, TrackedArray) or getattr(condition, "dtype", None) != np.bool_:
        raise TypeError(f"where: condition must be a bool numpy/cupy array, got "
                        f"{type(condition).__name__} of dtype {getattr(condition, 'dtype', None)}")
    arrays, xp, d, confidence, _ = _operands((x, y), "where")
    value = xp.where(condition, arrays[0]._value, arrays[1]._value)
    return TrackedArray._wrap(value, xp.where(condition, arrays[0]._bound, arrays[1]._bound), d, confidence)
