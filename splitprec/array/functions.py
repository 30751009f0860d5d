"""numpy functions on SplitArrays (the ``__array_function__`` registry): shapes, joins, reductions.

Shapes: ``reshape transpose swapaxes squeeze expand_dims broadcast_to ravel shape ndim size copy``
follow numpy; the first seven give views that share the storage and take their parts from it
(``reshape`` and ``ravel`` copy where numpy must).
``array_equal allclose isclose`` compare the values (bool results, as numpy's).

Contractions are in :mod:`splitprec.array.contractions`; numpy functions registered nowhere run
through :mod:`splitprec.array.fallback`.

Reductions: ``sum`` adds pairwise in float32 and keeps every addition's rounding error exactly
(TwoSum, Knuth, TAOCP vol. 2, 4.2.2), summing those errors along the same tree and adding them
last. With ``u = 2**-24``, ``h = ceil(log2 n)`` and ``g(k) = k*u / (1 - k*u)``, barring overflow,

    ``|sum - s| <= u*|s| + (1 + u)**(h + 1) * g(2*h) * g(h) * sum(|x_i|)``,

Ogita, Rump & Oishi's bound for Sum2 (SIAM J. Sci. Comput. 26(6), 2005, Prop. 4.5) with the
tree's depth in place of ``n``: the result is within one rounding of the exact sum unless the sum
cancels by a factor near ``1/(h**2 u)`` (checked by
``tests/test_array.py::test_sum_within_the_compensated_bound``). The operations are the same on
cpu and gpu, so are the results, bit for bit (``tests/test_array_gpu.py``), but for lines of finite
values whose partial sums pass float32's range: on cpu they are summed again scaled down (their
exact sum when it is in range), on gpu they give ±inf or NaN, as cupy's own sum. ``mean`` divides that
sum by ``n`` in float64 and rounds once. ``np.linalg.norm`` (2-norm and Frobenius; also ``vector_norm``
and ``matrix_norm``) scales by a power of two (exact), squares in float32 and sums as above: relative error <= 2u + O(u**2)
(``tests/test_array.py::test_norm_within_two_units_of_roundoff``); ``ord=1`` is the compensated
sum of magnitudes, ``0`` the count of nonzeros, ``±inf`` the largest or smallest magnitude (exact),
and any other order ``p`` is ``sum(|x|**p) ** (1/p)`` in float64 from the exact values scaled by the
row's largest (``p > 0``) or smallest (``p < 0``) magnitude, rounded once: within one float32
rounding plus ``O(n * 2**-53)``
(``tests/test_array.py::test_vector_norm_of_any_order_within_one_rounding_regression``). The
matrix orders other than Frobenius (``1 -1 2 -2 inf -inf 'nuc'``) run numpy's float32 SVD or sums.
``max min argmax argmin`` are not here: they are numpy's (exact), run on the values with all of
numpy's options by :mod:`splitprec.array.fallback`.
"""
import math
import numbers
import operator
import sys
import warnings

import numpy as np

from .._backend import is_cupy, namespace
from ..dtypes import SplitDType
from ..formats import narrow, widen
from ..interop import writable
from .core import HANDLED, SplitArray, data, finish, write_out
from .convert import as_float32, is_scheme_name, same_device, scheme


def implements(*functions):
    """Register the decorated handler for each numpy function given (None: absent in this numpy)."""
    def register(handler):
        for function in functions:
            if function is not None:
                HANDLED[function] = handler
        return handler
    return register


def no_options(op, options):
    """TypeError for numpy options given to ``op`` that SplitArrays do not take."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise TypeError(f"{op}: option(s) {', '.join(given)} not supported for SplitArray; "
                        "expected them left at None")


def _result(value, d):
    return finish(SplitArray._wrap(value, d))


# -- shapes ----------------------------------------------------------------------------------------

@implements(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    result = a.reshape(shape if newshape is None else newshape, order=order)
    if copy:
        return result.copy()
    if copy is False and not namespace(a._value).may_share_memory(result._value, a._value) and a.size:
        raise ValueError(f"reshape: copy=False but shape {result.shape} of an array of shape "
                         f"{a.shape} and these strides needs a copy")
    return result


@implements(np.transpose)
def _transpose(a, axes=None):
    return a.transpose(axes)


@implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


@implements(np.squeeze)
def _squeeze(a, axis=None):
    return a.squeeze(axis)


@implements(np.ravel)
def _ravel(a, order="C"):
    return a._view(lambda v: v.ravel(order))


@implements(np.expand_dims)
def _expand_dims(a, axis):
    xp = namespace(a._value)
    return a._view(lambda v: xp.expand_dims(v, axis))


@implements(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    xp = namespace(array._value)
    return array._view(lambda v: xp.broadcast_to(v, shape))


@implements(np.shape)
def _shape(a):
    return a.shape


@implements(np.ndim)
def _ndim(a):
    return a.ndim


@implements(np.size)
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


@implements(np.copy)
def _copy(a, order="K", subok=False):
    return a.copy()


def _comparison(name):
    def compare(a, b, *args, **kwargs):
        values = [x._value if isinstance(x, SplitArray) else x for x in (a, b)]
        return getattr(same_device(name, *values), name)(*values, *args, **kwargs)
    return compare


for _name in ("array_equal", "allclose", "isclose"):
    implements(getattr(np, _name))(_comparison(_name))


# -- reductions ------------------------------------------------------------------------------------

def _axes(a, axis, op):
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes of ``a``: numpy's
    AxisError for an axis out of range, ValueError for a repeated one."""
    axes = tuple(range(a.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(operator.index(ax) for ax in axes)
    for ax in axes:
        if not -a.ndim <= ax < a.ndim:
            raise np.exceptions.AxisError(ax, a.ndim, msg_prefix=op)
    axes = tuple(ax % a.ndim for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {axis!r} repeats an axis; expected distinct axes of an array of "
                         f"ndim {a.ndim}")
    return tuple(sorted(axes))


def _along_last(a, axes, value=None):
    """``a``'s value (or ``value`` of its shape) with ``axes`` moved to the end and merged into one."""
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = (a._value if value is None else value).transpose(rest + list(axes))
    return moved.reshape(moved.shape[:len(rest)] + (math.prod(a.shape[i] for i in axes),))


def _kept(a, value, axes, keepdims):
    return value.reshape(tuple(1 if i in axes else n for i, n in enumerate(a.shape))) \
        if keepdims else value


def _compensated_sum(v, xp):
    """Sum over the last axis of float32 ``v``: (pairwise sum, sum of its exact rounding errors).

    On numpy, a line of finite values whose partial sums pass float32's range (inf or NaN where the
    total may be finite, as ``[3e38, 3e38, -3e38, -3e38]``) is summed again scaled by ``2**-e``,
    ``2**e >= 2n`` (no partial sum then reaches the top), and scaled back: exact but where a scaled
    value falls below the normal range, by at most ``n 2**(e-150)`` in all, far inside the bound
    (whose ``sum |x_i|`` term exceeds ``2**127`` on such a line); a total past the range is ±inf."""
    s, c = _pairwise_sum(v, xp)
    if xp is np and v.size and not (np.isfinite(s).all() and np.isfinite(c).all()):
        with np.errstate(over="ignore", invalid="ignore"):         # a sum, or its TwoSum errors, past the range
            passed = ~(np.isfinite(s) & np.isfinite(c)) & np.isfinite(v).all(axis=-1)
            if passed.any():
                e = (2 * v.shape[-1]).bit_length()
                scaled_s, scaled_c = _pairwise_sum(np.ldexp(v[passed], -e), xp)
                s[passed], c[passed] = np.ldexp(scaled_s, e), np.ldexp(scaled_c, e)
    return s, c


def _pairwise_sum(v, xp):
    """:func:`_compensated_sum` without its overflow rescue."""
    s, c = v, None
    if s.shape[-1] == 0:
        return (xp.zeros(v.shape[:-1], np.float32),) * 2
    with np.errstate(over="ignore", invalid="ignore"):
        while s.shape[-1] > 1:
            if s.shape[-1] % 2:
                pad = xp.zeros(s.shape[:-1] + (1,), np.float32)
                s, c = xp.concatenate([s, pad], -1), None if c is None else xp.concatenate([c, pad], -1)
            x, y = s[..., 0::2], s[..., 1::2]
            s = x + y
            z = s - x
            e = xp.where(xp.isfinite(s), (x - (s - z)) + (y - z), np.float32(0))   # x+y-s, exact
            c = e if c is None else (c[..., 0::2] + c[..., 1::2]) + e
    return s[..., 0], xp.zeros_like(s[..., 0]) if c is None else c[..., 0]


def _sum_parts(a, axis, op, where=True, initial=None):
    """``(s, c, axes, lines)``: the compensated sum of ``a`` over ``axis``, of the elements where
    ``where`` holds (and of ``initial``), with ``lines`` the summed values, one line per output.
    A bool axis is refused, as numpy's reductions refuse it (its norms take it as an integer)."""
    if any(isinstance(ax, (bool, np.bool_)) for ax in (axis if isinstance(axis, tuple) else (axis,))):
        raise TypeError(f"{op}: axis {axis!r} holds a bool; expected None, an integer or a tuple of integers")
    axes = _axes(a, axis, op)
    xp = namespace(a._value)
    value = a._value if where is True else xp.where(xp.broadcast_to(xp.asarray(where), a.shape), a._value, np.float32(0))
    lines = _along_last(a, axes, value)
    if initial is not None:        # a Python scalar is weak, as an operator's operand is (NEP 50)
        weak = isinstance(initial, (int, float)) and not isinstance(initial, np.generic)
        start = xp.asarray(initial, np.float32) if weak else data(initial, op, "initial").reshape(())
        lines = xp.concatenate([lines, xp.broadcast_to(start, lines.shape[:-1] + (1,))], axis=-1)
    s, c = _compensated_sum(lines, xp)
    return s, c, axes, lines


def compensated_total(a, axes):
    """The compensated sum of SplitArray ``a`` over ``axes`` (a tuple), as a float32 array."""
    s, c, _, _ = _sum_parts(a, axes, "sum")
    with np.errstate(over="ignore", invalid="ignore"):
        return s + c


def _wide(dtype):
    """True for a ``dtype=`` of a reduction other than float32 (a scheme, or its name, stands for float32)."""
    if dtype is None or isinstance(dtype, SplitDType) or (isinstance(dtype, str) and is_scheme_name(dtype)):
        return False
    return np.dtype(dtype) != np.float32


def _deliver(a, value, axes, keepdims, out, op):
    """A reduction's float32 ``value`` as a SplitArray of ``a``'s scheme, or written into ``out``:
    a SplitArray, or a numpy/cupy array of any dtype, cast as numpy's reductions cast into ``out``
    (unsafe casting: ``np.sum(x, out=int32_array)`` truncates)."""
    value = _kept(a, value, axes, keepdims)
    if out is None or isinstance(out, SplitArray):
        return _result(value, a._dtype) if out is None else write_out(out, value, a._dtype, op)
    if not (isinstance(out, np.ndarray) or is_cupy(out)):
        raise TypeError(f"{op}: out is a {type(out).__name__}; expected a SplitArray or a numpy/cupy array")
    if out.shape != value.shape:
        raise ValueError(f"{op}: out has shape {out.shape}; expected the result's shape {value.shape}")
    out[...] = value
    return out


_FP_ERRORS = {"divide by zero": ("divide", 1), "overflow": ("over", 2), "underflow": ("under", 4),
              "invalid value": ("invalid", 8)}


def fp_error(kind, op, stacklevel=3):
    """numpy's report of floating-point error ``kind`` (a key of ``_FP_ERRORS``) in ``op``, in the
    mode ``np.errstate`` sets for it: ignore, warn (RuntimeWarning), raise (FloatingPointError),
    call (``np.seterrcall``'s function), print (to stderr) or log (its ``write``)."""
    setting, flag = _FP_ERRORS[kind]
    mode, message = np.geterr()[setting], f"{kind} encountered in {op}"
    if mode == "warn":
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)
    elif mode == "raise":
        raise FloatingPointError(message)
    elif mode == "call":
        np.geterrcall()(kind, flag)
    elif mode == "print":
        print(f"Warning: {message}", file=sys.stderr)
    elif mode == "log":
        np.geterrcall().write(f"Warning: {message}\n")


def _fp_check(lines, total, op, count=None):
    """numpy's floating-point reports for a reduction: overflow where ``total`` is ±inf for a line
    of finite values, invalid where it is NaN for a line without NaN (inf - inf); a mean's lines of
    ``count`` 0 are left out (their 0/0 reported itself). On cupy storage nothing is reported, as
    cupy reports nothing."""
    if namespace(lines) is not np or np.isfinite(total).all():
        return
    if count is not None:
        total = np.where(np.asarray(count) > 0, total, np.float32(0))
    if (np.isinf(total) & np.isfinite(lines).all(axis=-1)).any():
        fp_error("overflow", op, stacklevel=4)
    if (np.isnan(total) & ~np.isnan(lines).any(axis=-1)).any():
        fp_error("invalid value", op, stacklevel=4)


def _reduced(a, out, op):
    """The operand of a reduction: a SplitArray, or other data (numpy data reduced into a
    SplitArray ``out``) by the input rule, in ``out``'s scheme (else the default). A read-only
    ``out`` raises ValueError naming it, on every path (``dtype=float64``'s too)."""
    writable(out, op)
    if isinstance(a, SplitArray):
        return a
    return SplitArray._wrap(as_float32(a, op, "a"), out._dtype if isinstance(out, SplitArray) else scheme(None, op))


@implements(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    a = _reduced(a, out, "sum")
    if _wide(dtype):                           # numpy's sum in that dtype (float64: of exact values)
        options = {} if initial is None else {"initial": initial}
        return namespace(a._value).sum(a._value, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                       where=where, **options)
    s, c, axes, lines = _sum_parts(a, axis, "sum", where, initial)
    with np.errstate(over="ignore", invalid="ignore"):
        total = s + c
    _fp_check(lines, total, "sum")
    return _deliver(a, total, axes, keepdims, out, "sum")


@implements(np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = _reduced(a, out, "mean")
    if _wide(dtype):
        return namespace(a._value).mean(a._value, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    s, c, axes, lines = _sum_parts(a, axis, "mean", where)
    xp = namespace(a._value)
    count = math.prod(a.shape[i] for i in axes) if where is True else \
        _along_last(a, axes, xp.broadcast_to(xp.asarray(where), a.shape)).sum(axis=-1)
    if xp is np and not np.all(count):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
    with np.errstate(over="ignore", divide="ignore"):         # 0 / 0 reports "invalid", as numpy's
        mean = xp.divide(s.astype(np.float64) + c.astype(np.float64), count).astype(np.float32)
    _fp_check(lines, mean, "mean", count)
    return _deliver(a, mean, axes, keepdims, out, "mean")


def _two_norm(v, xp):
    """sqrt(sum(v**2)) over the last axis of float32 ``v``, scaled by a power of two (exact)."""
    peak = xp.abs(v).max(axis=-1, keepdims=True) if v.shape[-1] else \
        xp.zeros(v.shape[:-1] + (1,), np.float32)
    exponent = xp.where(xp.isfinite(peak), xp.frexp(peak)[1], 0).astype(np.int32)
    y = xp.ldexp(v, -exponent).astype(np.float32)          # |y| < 1
    s, c = _compensated_sum(y * y, xp)
    return xp.ldexp(xp.sqrt(s + c), exponent[..., 0]).astype(np.float32)


def _power_norm(magnitude, ord, xp):
    """``sum(m**ord) ** (1/ord)`` over the last axis of float32 magnitudes ``m``, in float64 from
    the exact values scaled by the largest (``ord > 0``) or smallest (``ord < 0``) of each row, so
    that no power overflows or underflows, and rounded once to float32. A zero with ``ord < 0``
    gives 0, an inf with ``ord > 0`` inf, a NaN NaN, as numpy's formula does."""
    wide = widen(magnitude)
    if wide.shape[-1] == 0:
        scale = xp.ones(wide.shape[:-1] + (1,))
    else:
        scale = (wide.max if ord > 0 else wide.min)(axis=-1, keepdims=True)
        scale = xp.where(xp.isfinite(scale) & (scale > 0), scale, 1.0)
    with np.errstate(divide="ignore"):
        total = ((wide / scale) ** ord).sum(axis=-1)
        return narrow(total ** (1.0 / ord) * scale[..., 0])


def _vector_norm_value(v, ord, xp):
    """The ``ord`` norm of each row of float32 ``v`` (2: scaled compensated; 1: compensated sum;
    0: the count of nonzeros; ±inf: the largest, smallest magnitude; others: :func:`_power_norm`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if ord == 2:
            return _two_norm(v, xp)
        magnitude = xp.abs(v)
        if ord == 1:
            return sum(_compensated_sum(magnitude, xp))
        if ord == 0:
            return (v != 0).sum(axis=-1).astype(np.float32)
        if ord == np.inf and not v.shape[-1]:                # numpy's: 0 for an empty vector
            return xp.zeros(v.shape[:-1], np.float32)
        if ord in (np.inf, -np.inf):
            return (magnitude.max if ord > 0 else magnitude.min)(axis=-1)
        return _power_norm(magnitude, ord, xp)


def _vector_ord(ord, op):
    """``ord`` of a vector norm: any int or float (numpy's and the standard's), or a ValueError."""
    if not isinstance(ord, numbers.Real):
        raise ValueError(f"{op}: invalid norm order {ord!r} for vectors; expected an int or a float "
                         "(inf and -inf included)")
    return ord


@implements(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    axes = _axes(x, axis, "norm")
    if len(axes) == 2 and ord not in (None, "fro"):          # numpy's float32 SVD or sums
        value = namespace(x._value).linalg.norm(x._value, ord=ord, axis=axes if axis is None else axis,
                                                keepdims=keepdims)
        return _result(value, x._dtype) if value.dtype == np.float32 else value
    if len(axes) == 1 and ord is not None:
        ord = _vector_ord(ord, "norm")
    elif not (ord is None or (ord == "fro" and len(axes) == 2)):
        raise ValueError(f"norm: ord={ord!r} over {len(axes)} axes; expected ord=None, or an axis "
                         "naming one axis (a vector norm) or two (a matrix norm)")
    value = _vector_norm_value(_along_last(x, axes), 2 if ord in (None, "fro") else ord, namespace(x._value))
    return _result(_kept(x, value, axes, keepdims), x._dtype)


@implements(getattr(np.linalg, "vector_norm", None))
def _vector_norm(x, axis=None, keepdims=False, ord=2):
    ord = _vector_ord(ord, "vector_norm")
    axes = _axes(x, axis, "vector_norm")
    value = _vector_norm_value(_along_last(x, axes), ord, namespace(x._value))
    return _result(_kept(x, value, axes, keepdims), x._dtype)


@implements(getattr(np.linalg, "matrix_norm", None))
def _matrix_norm(x, keepdims=False, ord="fro"):
    return _norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)
