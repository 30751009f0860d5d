"""numpy functions on SplitArrays (the ``__array_function__`` registry): shapes, contractions, reductions.

Shapes: ``reshape transpose swapaxes squeeze expand_dims broadcast_to ravel concatenate stack shape
ndim size copy`` follow numpy; the first seven give views that share the storage (and its
cache versioning; ``reshape`` and ``ravel`` copy where numpy must).
``array_equal allclose isclose`` compare the values (bool results, as numpy's).

Contractions: ``np.dot``, ``np.tensordot`` and ``np.einsum`` (``np.matmul`` and ``@`` are ufuncs,
handled by ``SplitArray.__array_ufunc__``) become one batched :func:`splitprec.matmul` in the
promoted scheme: operand A is arranged as (batch, free, summed) and B as (batch, summed, free), each
reshaped to 3-D (an identity arrangement leaves the operand, and its cached parts, untouched).

Reductions: ``sum`` adds pairwise in float32 and keeps every addition's rounding error exactly
(TwoSum, Knuth, TAOCP vol. 2, 4.2.2), summing those errors along the same tree and adding them
last. With ``u = 2**-24``, ``h = ceil(log2 n)`` and ``g(k) = k*u / (1 - k*u)``, barring overflow,

    ``|sum - s| <= u*|s| + (1 + u)**(h + 1) * g(2*h) * g(h) * sum(|x_i|)``,

Ogita, Rump & Oishi's bound for Sum2 (SIAM J. Sci. Comput. 26(6), 2005, Prop. 4.5) with the
tree's depth in place of ``n``: the result is within one rounding of the exact sum unless the sum
cancels by a factor near ``1/(h**2 u)`` (checked by
``tests/test_array.py::test_sum_within_the_compensated_bound``). The operations are the same on
cpu and gpu, so are the results, bit for bit (``tests/test_array_gpu.py``). ``mean`` divides that
sum by ``n`` in float64 and rounds once. ``np.linalg.norm`` (2-norm and Frobenius) scales by a
power of two (exact), squares in float32 and sums as above: relative error <= 2u + O(u**2)
(``tests/test_array.py::test_norm_within_two_units_of_roundoff``). ``max min argmax argmin`` are
numpy's (exact).
"""
import math
import string

import numpy as np

from .._backend import namespace
from .core import HANDLED, SplitArray, _finish, _namespace, _write_out, matmul, promote

_LABELS = string.ascii_letters


def _implements(*functions):
    def register(handler):
        for function in functions:
            HANDLED[function] = handler
        return handler
    return register


def _no_options(op, options):
    """TypeError for numpy options given to ``op`` that SplitArrays do not take."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise TypeError(f"{op}: option(s) {', '.join(given)} not supported for SplitArray; "
                        "expected them left at None")


def _result(value, d):
    return _finish(SplitArray._wrap(value, d))


# -- shapes ----------------------------------------------------------------------------------------

@_implements(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _no_options("reshape", {"copy": copy})
    return a.reshape(shape if newshape is None else newshape, order=order)


@_implements(np.transpose)
def _transpose(a, axes=None):
    return a.transpose(axes)


@_implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


@_implements(np.squeeze)
def _squeeze(a, axis=None):
    return a.squeeze(axis)


@_implements(np.ravel)
def _ravel(a, order="C"):
    return a._view(lambda v: v.ravel(order))


@_implements(np.expand_dims)
def _expand_dims(a, axis):
    xp = namespace(a._value)
    return a._view(lambda v: xp.expand_dims(v, axis))


@_implements(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    xp = namespace(array._value)
    return array._view(lambda v: xp.broadcast_to(v, shape))


@_implements(np.shape)
def _shape(a):
    return a.shape


@_implements(np.ndim)
def _ndim(a):
    return a.ndim


@_implements(np.size)
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


@_implements(np.copy)
def _copy(a, order="K", subok=False):
    return a.copy()


def _joined(arrays, op, options):
    """The values of ``arrays`` (SplitArrays or float32/float16 arrays) and their promoted scheme."""
    _no_options(op, options)
    arrays = list(arrays)
    d = promote(*[x._dtype for x in arrays if isinstance(x, SplitArray)])
    values = [_plain(x, op)._value for x in arrays]
    return values, d, _namespace(op, *values)


@_implements(np.concatenate)
def _concatenate(arrays, axis=0, out=None, **options):
    values, d, xp = _joined(arrays, "concatenate", dict(options, out=out))
    return SplitArray._wrap(xp.concatenate(values, axis=axis), d)


@_implements(np.stack)
def _stack(arrays, axis=0, out=None, **options):
    values, d, xp = _joined(arrays, "stack", dict(options, out=out))
    return SplitArray._wrap(xp.stack(values, axis=axis), d)


def _comparison(name):
    def compare(a, b, *args, **kwargs):
        values = [x._value if isinstance(x, SplitArray) else x for x in (a, b)]
        return getattr(_namespace(name, *values), name)(*values, *args, **kwargs)
    return compare


for _name in ("array_equal", "allclose", "isclose"):
    _implements(getattr(np, _name))(_comparison(_name))


# -- contractions ----------------------------------------------------------------------------------

def _plain(x, op, d=None):
    """``x`` as a SplitArray: SplitArrays as they are, float32/float16 arrays wrapped (scheme d)."""
    if isinstance(x, SplitArray):
        return x
    if getattr(x, "dtype", None) not in (np.float32, np.float16) or not hasattr(x, "ndim"):
        raise TypeError(f"{op}: operand of type {type(x).__name__} with dtype "
                        f"{getattr(x, 'dtype', None)} is not accepted; expected a SplitArray or a "
                        "float32/float16 array")
    return SplitArray._wrap(x.astype(np.float32, copy=False), d)


def _pair(a, b, op):
    d = promote(*[x._dtype for x in (a, b) if isinstance(x, SplitArray)])
    return _plain(a, op, d), _plain(b, op, d)


def _arrange(x, labels, order, shape):
    """``x`` (axes ``labels``) with its axes in ``order`` and reshaped to ``shape``."""
    perm = [labels.index(c) for c in order]
    if perm != list(range(x.ndim)):
        x = x.transpose(perm)
    return x if shape == x.shape else x.reshape(shape)


def _contract(a, b, sub_a, sub_b, sub_out, op):
    """The contraction ``sub_a,sub_b->sub_out`` (label strings) as one batched matmul."""
    size = {}
    for labels, x in ((sub_a, a), (sub_b, b)):
        for c, n in zip(labels, x.shape):
            if size.setdefault(c, n) != n:
                raise ValueError(f"{op}: a summed or batch axis has length {size[c]} in a and {n} "
                                 f"in b (a has shape {a.shape}, b has shape {b.shape}); expected "
                                 "equal lengths")
    batch = [c for c in sub_out if c in sub_a and c in sub_b]
    free_a = [c for c in sub_out if c in sub_a and c not in sub_b]
    free_b = [c for c in sub_out if c in sub_b and c not in sub_a]
    summed = [c for c in sub_a if c in sub_b and c not in sub_out]
    lengths = lambda labels: tuple(size[c] for c in labels)   # noqa: E731
    m, k, n = (math.prod(lengths(x)) for x in (free_a, summed, free_b))
    a3 = _arrange(a, list(sub_a), batch + free_a + summed, lengths(batch) + (m, k))
    b3 = _arrange(b, list(sub_b), batch + summed + free_b, lengths(batch) + (k, n))
    c = matmul(a3, b3, op=op)
    arranged = batch + free_a + free_b
    return _finish(_arrange(c.reshape(lengths(arranged)), arranged, list(sub_out), lengths(sub_out)))


def _einsum_labels(subscripts, a, b):
    """(sub_a, sub_b, sub_out) of a supported two-operand ``subscripts``, or a TypeError."""
    inputs, arrow, sub_out = subscripts.replace(" ", "").partition("->")
    sub_a, _, sub_b = inputs.partition(",")
    both = sub_a + sub_b
    if not arrow:
        sub_out = "".join(sorted(c for c in set(both) if both.count(c) == 1))
    supported = all(c in _LABELS for c in both + sub_out) and "," not in sub_b and all(
        len(set(s)) == len(s) for s in (sub_a, sub_b, sub_out)) and set(sub_out) <= set(both) \
        and all(c in sub_out for c in set(sub_a) ^ set(sub_b))
    if not supported:
        raise TypeError(f"einsum: {subscripts!r} is not a two-operand contraction that maps to "
                        "matmul; supported: each index at most once per operand and either in "
                        "both operands or in the output, e.g. 'ij,jk->ik', 'bij,bjk->bik', "
                        "'ij,kj->ik'")
    if (len(sub_a), len(sub_b)) != (a.ndim, b.ndim):
        raise ValueError(f"einsum: {subscripts!r} names {len(sub_a)} and {len(sub_b)} axes; the "
                         f"operands have {a.ndim} and {b.ndim}")
    return sub_a, sub_b, sub_out


@_implements(np.einsum)
def _einsum(subscripts, *operands, out=None, optimize=False, **options):
    _no_options("einsum", dict(options, out=out))
    if not isinstance(subscripts, str) or len(operands) != 2:
        raise TypeError(f"einsum: {len(operands)} operand(s) with subscripts of type "
                        f"{type(subscripts).__name__}; expected a subscripts string and two operands")
    a, b = _pair(*operands, "einsum")
    return _contract(a, b, *_einsum_labels(subscripts, a, b), "einsum")


@_implements(np.tensordot)
def _tensordot(a, b, axes=2):
    a, b = _pair(a, b, "tensordot")
    if isinstance(axes, int):
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        axes_a, axes_b = ([x] if isinstance(x, int) else list(x) for x in axes)
    sub_a, sub_b = list(_LABELS[:a.ndim]), list(_LABELS[a.ndim:a.ndim + b.ndim])
    if len(axes_a) != len(axes_b) or len(set(axes_a)) != len(axes_a) or \
            len(set(axes_b)) != len(axes_b) or not all(-x.ndim <= i < x.ndim for x, ax in
                                                       ((a, axes_a), (b, axes_b)) for i in ax):
        raise ValueError(f"tensordot: axes {axes!r} do not pair distinct axes of a (ndim {a.ndim}) "
                         f"with as many distinct axes of b (ndim {b.ndim})")
    for i, j in zip(axes_a, axes_b):
        sub_b[j] = sub_a[i]
    sub_out = [c for c in sub_a + sub_b if (sub_a + sub_b).count(c) == 1]
    return _contract(a, b, "".join(sub_a), "".join(sub_b), "".join(sub_out), "tensordot")


@_implements(np.dot)
def _dot(a, b, out=None):
    _no_options("dot", {"out": out})
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    a, b = _pair(a, b, "dot")
    sub_a, sub_b = list(_LABELS[:a.ndim]), list(_LABELS[a.ndim:a.ndim + b.ndim])
    sub_b[-1 if b.ndim == 1 else -2] = sub_a[-1]
    sub_out = sub_a[:-1] + [c for c in sub_b if c != sub_a[-1]]
    return _contract(a, b, "".join(sub_a), "".join(sub_b), "".join(sub_out), "dot")


# -- reductions ------------------------------------------------------------------------------------

def _axes(a, axis, op):
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes of ``a``."""
    axes = tuple(range(a.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    if not all(-a.ndim <= ax < a.ndim for ax in axes) or len({ax % a.ndim for ax in axes}) != len(axes):
        raise ValueError(f"{op}: axis {axis!r} is not a set of distinct axes of an array of ndim "
                         f"{a.ndim}")
    return tuple(sorted(ax % a.ndim for ax in axes))


def _along_last(a, axes):
    """``a``'s value with ``axes`` moved to the end and merged into one axis."""
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = a._value.transpose(rest + list(axes))
    return moved.reshape(moved.shape[:len(rest)] + (math.prod(a.shape[i] for i in axes),))


def _kept(a, value, axes, keepdims):
    return value.reshape(tuple(1 if i in axes else n for i, n in enumerate(a.shape))) \
        if keepdims else value


def _compensated_sum(v, xp):
    """Sum over the last axis of float32 ``v``: (pairwise sum, sum of its exact rounding errors)."""
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


def _sum_parts(a, axis, op):
    axes = _axes(a, axis, op)
    s, c = _compensated_sum(_along_last(a, axes), namespace(a._value))
    return s, c, axes


@_implements(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, **options):
    _no_options("sum", dict(options, out=out, dtype=None if dtype == np.float32 else dtype))
    s, c, axes = _sum_parts(a, axis, "sum")
    with np.errstate(over="ignore", invalid="ignore"):
        return _result(_kept(a, s + c, axes, keepdims), a._dtype)


@_implements(np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, **options):
    _no_options("mean", dict(options, out=out, dtype=None if dtype == np.float32 else dtype))
    s, c, axes = _sum_parts(a, axis, "mean")
    n = math.prod(a.shape[i] for i in axes)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = ((s.astype(np.float64) + c.astype(np.float64)) / n).astype(np.float32)
    return _result(_kept(a, mean, axes, keepdims), a._dtype)


def _extreme(name):
    def reduce(a, axis=None, out=None, keepdims=False, **options):
        _no_options(name, dict(options, out=out))
        value = getattr(namespace(a._value), name)(a._value, axis=axis, keepdims=keepdims)
        return _result(value, a._dtype) if name in ("max", "min") else value
    return reduce


for _name, _functions in (("max", (np.max, np.amax)), ("min", (np.min, np.amin)),
                          ("argmax", (np.argmax,)), ("argmin", (np.argmin,))):
    _implements(*_functions)(_extreme(_name))


def _two_norm(v, xp):
    """sqrt(sum(v**2)) over the last axis of float32 ``v``, scaled by a power of two (exact)."""
    peak = xp.abs(v).max(axis=-1, keepdims=True) if v.shape[-1] else \
        xp.zeros(v.shape[:-1] + (1,), np.float32)
    exponent = xp.where(xp.isfinite(peak), xp.frexp(peak)[1], 0).astype(np.int32)
    y = xp.ldexp(v, -exponent).astype(np.float32)          # |y| < 1
    s, c = _compensated_sum(y * y, xp)
    return xp.ldexp(xp.sqrt(s + c), exponent[..., 0]).astype(np.float32)


@_implements(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    axes = _axes(x, axis, "norm")
    v, xp = _along_last(x, axes), namespace(x._value)
    with np.errstate(over="ignore", invalid="ignore"):
        if ord is None or (ord == "fro" and len(axes) == 2) or (ord == 2 and len(axes) == 1):
            value = _two_norm(v, xp)
        elif len(axes) == 1 and ord in (1, np.inf, -np.inf):
            magnitude = xp.abs(v)
            value = sum(_compensated_sum(magnitude, xp)) if ord == 1 else \
                (magnitude.max if ord > 0 else magnitude.min)(axis=-1)
        else:
            raise TypeError(f"norm: ord={ord!r} over {len(axes)} axis/axes is not supported for "
                            "SplitArray; expected None, 2, 1, inf or -inf for vectors, None or "
                            "'fro' for matrices")
    return _result(_kept(x, value, axes, keepdims), x._dtype)
