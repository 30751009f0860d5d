"""Contractions of SplitArrays, run in the scheme: each is batched :func:`splitprec.matmul` calls
(but ``outer``, which sums nothing: each product rounded once from its exact value).

Members: ``@``/``np.matmul``, ``np.dot vdot inner outer tensordot einsum``, ``np.linalg.multi_dot``,
``np.vecdot matvec vecmat``, ``np.linalg.matmul vecdot tensordot outer`` (numpy >= 2) and
``np.linalg.matrix_power`` (binary powering).

A pair contraction arranges operand A as (batch, free, summed) and B as (batch, summed, free),
each reshaped to 3-D (an identity arrangement leaves the operand, and its cached parts, untouched),
and runs one batched matmul in the promoted scheme. ``einsum`` takes any subscripts and any number
of operands: ``...`` broadcasts (right-aligned, as numpy's), a label repeated within one operand
takes that diagonal first (an exact gather), a label of one operand that is neither in another
nor in the output is summed first with the compensated ``sum`` (splitprec.array.functions), length-1
axes broadcast, and then the operands are contracted pairwise from left to right,
``((op0 op1) op2) ...``, each step keeping the labels that a later operand or the output needs.
``optimize`` is accepted and ignored (the order is fixed). ``multi_dot`` multiplies in the order
of least work (the matrix-chain recurrence), as numpy's does.
Accuracy: each matmul within ``accuracy.gemm_bound`` of its inputs, checked by
``tests/test_array_functions.py::test_contractions_within_gemm_bound``.
"""
import math
import numbers
import operator
import string

import numpy as np

from .._backend import is_cupy
from ..dtypes import SplitDType
from ..formats import narrow, widen
from ..interop import writable
from ..linalg import _raw_matmul, _scheme as linalg_scheme, core_axes, core_last, core_placed
from .core import PROTOCOLS, SplitArray, data, finish, result_scheme, write_out
from .convert import as_float32, same_device
from .functions import compensated_total, implements, no_options

LABELS = string.ascii_letters


def matmul(a, b, *, out=None, dtype=None, precision=None, op="matmul", axes=None):
    """``a @ b`` through ``splitprec.matmul``'s engine with the cached parts of SplitArrays;
    ``axes``: numpy's (the core axes are moved last as views, and the result's moved back)."""
    if dtype is None and precision is None:
        dtype = result_scheme((a, b), (out,))
    if axes is not None:
        entries = core_axes(axes, np.ndim(a), np.ndim(b), op)
        c = matmul(core_last(a, entries[0], np.moveaxis), core_last(b, entries[1], np.moveaxis),
                   dtype=dtype, precision=precision, op=op)
        c = core_placed(c, entries[2], np.moveaxis)
        if out is None:
            return c
        d = c._dtype if isinstance(c, SplitArray) else linalg_scheme(dtype, precision, op, on_gpu=is_cupy(c))
        return written(out, data(c, op, "the result"), d, op)     # a scalar c: two vectors' product
    values = [x._value if isinstance(x, SplitArray) else as_float32(x, op, name) for x, name in ((a, "a"), (b, "b"))]
    d = linalg_scheme(dtype, precision, op, on_gpu=same_device(op, *values) is not np)
    splitters = [x._parts if isinstance(x, SplitArray) else None for x in (a, b)]
    caches = [x._cached if isinstance(x, SplitArray) else None for x in (a, b)]
    value = _raw_matmul(*values, out=None, dtype=d, precision=None, op=op, splitters=splitters, caches=caches)
    return finish(SplitArray._wrap(value, d)) if out is None else written(out, value, d, op)


def written(out, value, d, op):
    """``out`` holding a contraction's float32 ``value`` (scheme ``d``): a SplitArray
    (:func:`write_out`) or, as numpy's ``out=``, a writable float32 numpy/cupy array of its shape."""
    if isinstance(out, SplitArray) or not (isinstance(out, np.ndarray) or is_cupy(out)):
        return write_out(out, value, d, op)
    if not np.can_cast(np.float32, out.dtype, "safe"):
        raise TypeError(f"{op}: out has dtype {out.dtype}; expected float32, the result's dtype, or "
                        "one that holds it exactly (float64), or a SplitArray")
    if out.shape != value.shape:
        raise ValueError(f"{op}: out has shape {out.shape} but the result has shape {value.shape}; "
                         "expected equal shapes")
    writable(out, op)
    same_device(op, out, value)
    out[...] = value
    return out


def plain(x, op, d=None, name="a"):
    """``x`` as a SplitArray: SplitArrays as they are, other data by the one input rule
    (``as_float32``, whose errors name ``op`` and the argument ``name``) wrapped in scheme ``d``."""
    if isinstance(x, SplitArray):
        return x
    return SplitArray._wrap(as_float32(x, op, name), d)


def _operands(arrays, op, out=None, names=("a", "b")):
    """``arrays`` as SplitArrays of their promoted scheme (or ``out``'s); ``names``: the arguments'
    names for error messages (numpy's parameter names)."""
    d = result_scheme(arrays, (out,))
    return [plain(x, op, d, name) for x, name in zip(arrays, names)]


def _indexed(name, count):
    """Argument names ``name[0]``, ``name[1]``, ... of a function taking a sequence of arrays."""
    return [f"{name}[{i}]" for i in range(count)]


def _arrange(x, labels, order, shape):
    """``x`` (axes ``labels``) with its axes in ``order`` and reshaped to ``shape``."""
    perm = [labels.index(c) for c in order]
    if perm != list(range(x.ndim)):
        x = x.transpose(perm)
    return x if shape == x.shape else x.reshape(shape)


def label_groups(sub_a, sub_b, sub_out, shape_a, shape_b):
    """``(batch, free_a, free_b, summed, lengths)``: the labels of ``sub_a,sub_b->sub_out`` grouped as
    one batched matmul takes them (batch, rows of a, columns of b, summed), and ``lengths(labels)``,
    the sizes of labels."""
    size = dict(zip(sub_a, shape_a)) | dict(zip(sub_b, shape_b))
    batch = [c for c in sub_out if c in sub_a and c in sub_b]
    free_a = [c for c in sub_out if c in sub_a and c not in sub_b]
    free_b = [c for c in sub_out if c in sub_b and c not in sub_a]
    summed = [c for c in sub_a if c in sub_b and c not in sub_out]
    return batch, free_a, free_b, summed, lambda labels: tuple(size[c] for c in labels)


def contract(a, b, sub_a, sub_b, sub_out, op):
    """The contraction ``sub_a,sub_b->sub_out`` (label strings; every label of one operand only
    is in ``sub_out``, axes of one label have equal lengths) as one batched matmul."""
    batch, free_a, free_b, summed, lengths = label_groups(sub_a, sub_b, sub_out, a.shape, b.shape)
    m, k, n = (math.prod(lengths(x)) for x in (free_a, summed, free_b))
    a3 = _arrange(a, list(sub_a), batch + free_a + summed, lengths(batch) + (m, k))
    b3 = _arrange(b, list(sub_b), batch + summed + free_b, lengths(batch) + (k, n))
    c = matmul(a3, b3, op=op)                                   # ndim >= 2: a SplitArray
    arranged = batch + free_a + free_b
    return _arrange(c.reshape(lengths(arranged)), arranged, list(sub_out), lengths(sub_out))


# -- einsum ------------------------------------------------------------------------------------------

def _interleaved(operands):
    """numpy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` as (subscripts, operands)."""
    def letters(sublist):
        return "".join("..." if s is Ellipsis else LABELS[s] for s in sublist)
    explicit = len(operands) % 2 == 1
    pairs = operands[:-1] if explicit else operands
    subscripts = ",".join(letters(s) for s in pairs[1::2])
    return (subscripts + "->" + letters(operands[-1]) if explicit else subscripts), pairs[0::2]


def einsum_labels(subscripts, shapes, op="einsum"):
    """(labels per operand, output labels) of ``subscripts`` with ``...`` expanded to letters;
    errors name ``op`` (``matvec`` runs as an einsum)."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes) or not all(c in LABELS for c in (inputs + output).replace(".", "").replace(",", "")):
        raise ValueError(f"{op}: subscripts {subscripts!r} do not name letters for each of the "
                         f"{len(shapes)} operand(s); expected e.g. 'ij,jk->ik'")
    spare = [c for c in LABELS if c not in inputs + output]
    counts = [len(t.replace("...", "")) for t in terms]
    extra = [len(s) - n for t, s, n in zip(terms, shapes, counts)]
    if any(e < 0 or (e and "..." not in t) for t, e in zip(terms, extra)):
        raise ValueError(f"{op}: subscripts {subscripts!r} name more or fewer axes than the "
                         f"operands have (shapes {', '.join(map(str, shapes))})")
    ellipsis = "".join(spare[:max(extra, default=0)])
    labels = [t.replace("...", ellipsis[len(ellipsis) - e:]) for t, e in zip(terms, extra)]
    if not arrow:
        joined = "".join(labels)
        output = ellipsis + "".join(sorted(c for c in set(joined) - set(ellipsis) if joined.count(c) == 1))
    elif "..." in output or ellipsis:
        if "..." not in output and any(extra):
            raise ValueError(f"{op}: {subscripts!r} has '...' in an operand but not in the output")
        output = output.replace("...", ellipsis)
    if len(set(output)) != len(output) or not set(output) <= set("".join(labels)):
        raise ValueError(f"{op}: output subscripts of {subscripts!r} repeat a label or name one "
                         "that no operand has")
    return labels, output


def _diagonal(x, labels, op):
    """``x`` with each repeated label taken once (the diagonal, an exact gather; a view)."""
    unique = "".join(dict.fromkeys(labels))
    if unique == labels:
        return x, labels
    for c in unique:
        lengths = {n for t, n in zip(labels, x.shape) if t == c}
        if len(lengths) > 1:
            raise ValueError(f"{op}: label {c!r} repeats within an operand of shape {x.shape} with "
                             f"lengths {sorted(lengths)}; expected equal lengths (a diagonal)")
    xp = same_device("einsum", x._value)
    return SplitArray._wrap(xp.einsum(f"{labels}->{unique}", x._value), x._dtype, x._storage), unique


def _broadcast(x, labels, size):
    shape = tuple(size[c] for c in labels)
    if shape == x.shape:
        return x
    xp = same_device("einsum", x._value)
    return x._view(lambda v: xp.broadcast_to(v, shape))


def _summed_first(x, labels, needed):
    """``x`` summed (compensated) over the labels not ``needed``."""
    axes = tuple(i for i, c in enumerate(labels) if c not in needed)
    if not axes:
        return x, labels
    return SplitArray._wrap(compensated_total(x, axes), x._dtype), "".join(c for c in labels if c in needed)


def run_einsum(subscripts, operands, op="einsum"):
    """``np.einsum(subscripts, *operands)`` of SplitArrays in their promoted scheme (module
    docstring), as a SplitArray (of ndim 0 for a scalar)."""
    labels, output = einsum_labels(subscripts, [x.shape for x in operands], op)
    pairs = [_diagonal(x, s, op) for x, s in zip(operands, labels)]
    size = {}
    for x, s in pairs:
        for c, n in zip(s, x.shape):
            if size.setdefault(c, n) != n and 1 not in (n, size[c]):
                raise ValueError(f"{op}: label {c!r} has lengths {size[c]} and {n} (operands of "
                                 f"shapes {', '.join(str(x.shape) for x in operands)}); expected "
                                 "equal lengths or 1")
            size[c] = n if size[c] == 1 else size[c]            # 1 broadcasts to any length, 0 included
    pairs = [(_broadcast(x, s, size), s) for x, s in pairs]
    for i, (x, s) in enumerate(pairs):
        others = set(output).union(*[t for j, (_, t) in enumerate(pairs) if j != i])
        pairs[i] = _summed_first(x, s, others)
    current, have = pairs[0]
    for i, (x, s) in enumerate(pairs[1:], 1):
        needed = set(output).union(*[t for _, t in pairs[i + 1:]])
        keep = "".join(c for c in dict.fromkeys(have + s) if c in needed)
        current, have = contract(current, x, have, s, output if i == len(pairs) - 1 else keep, op), \
            output if i == len(pairs) - 1 else keep
    if len(pairs) == 1:
        current = _arrange(current, list(have), list(output), tuple(size[c] for c in output))
    return current


def _finished(result, out, op):
    """``result`` (a SplitArray) for the caller: its scalar if ndim 0, or written into ``out``."""
    return finish(result) if out is None else written(out, result._value, result._dtype, op)


@implements(np.einsum)
def _einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    no_options("einsum", {"dtype": dtype, "order": None if order == "K" else order,
                          "casting": None if casting == "safe" else casting})
    subscripts, arrays = (operands[0], operands[1:]) if isinstance(operands[0], str) else _interleaved(operands)
    if not arrays:
        raise ValueError("einsum: no operands; expected a subscripts string and at least one operand")
    operands = _operands(arrays, "einsum", out, _indexed("operands", len(arrays)))
    return _finished(run_einsum(subscripts, operands), out, "einsum")


# -- numpy's named contractions ----------------------------------------------------------------------

def _tensordot_labels(a, b, axes, op):
    if isinstance(axes, numbers.Integral):
        axes = operator.index(axes)
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        axes_a, axes_b = ([x] if isinstance(x, int) else list(x) for x in axes)
    sub_a, sub_b = list(LABELS[:a.ndim]), list(LABELS[a.ndim:a.ndim + b.ndim])
    if len(axes_a) != len(axes_b) or len(set(axes_a)) != len(axes_a) or \
            len(set(axes_b)) != len(axes_b) or not all(-x.ndim <= i < x.ndim for x, ax in
                                                       ((a, axes_a), (b, axes_b)) for i in ax):
        raise ValueError(f"{op}: axes {axes!r} do not pair distinct axes of a (ndim {a.ndim}) "
                         f"with as many distinct axes of b (ndim {b.ndim})")
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"{op}: a summed axis has length {a.shape[i]} in a and {b.shape[j]} "
                             f"in b (a has shape {a.shape}, b has shape {b.shape}); expected "
                             "equal lengths")
        sub_b[j] = sub_a[i]
    sub_out = [c for c in sub_a + sub_b if (sub_a + sub_b).count(c) == 1]
    return "".join(sub_a), "".join(sub_b), "".join(sub_out)


def _pair(a, b, axes, op, out=None):
    a, b = _operands((a, b), op, out)
    return _finished(contract(a, b, *_tensordot_labels(a, b, axes, op), op), out, op)


@implements(np.tensordot, getattr(np.linalg, "tensordot", None))
def _tensordot(a, b, axes=2):
    return _pair(a, b, axes, "tensordot")


def _scaled(a, b, op, out=None):
    """``a * b``: numpy's ``dot``/``inner`` with a 0-d operand (elementwise, float32). Python
    scalars stay weak, as in arithmetic; other data is checked here, so errors name ``op``, ``a``, ``b``."""
    def weak(x):
        return isinstance(x, (int, float)) and not isinstance(x, np.generic)
    d = result_scheme((a, b), (out,))
    a, b = (x if weak(x) else plain(x, op, d, name) for x, name in ((a, "a"), (b, "b")))
    return np.multiply(a, b, out=out)


def _dotted(a, b, op, out=None):
    """numpy's ``dot``: a scalar times an array, else the sum over the last axis of ``a`` and the
    second-to-last of ``b`` (its only axis if 1-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return _scaled(a, b, op, out)
    return _pair(a, b, ([-1], [max(np.ndim(b) - 2, 0)]), op, out)


@implements(np.dot)
def _dot(a, b, out=None):
    return _dotted(a, b, "dot", out)


@implements(np.inner)
def _inner(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return _scaled(a, b, "inner")
    return _pair(a, b, ([-1], [-1]), "inner")


@implements(np.vdot)
def _vdot(a, b):
    a, b = _operands((a, b), "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: a has {a.size} elements and b {b.size}; expected equal sizes")
    return finish(run_einsum("i,i->", [a.reshape(-1), b.reshape(-1)], "vdot"))


@implements(np.outer)
def _outer(a, b, out=None):
    """``numpy.outer``: each ``a[i] * b[j]`` of the flattened operands, a product with no sum, rounded
    once to float32 from its exact float64 value: the correctly rounded product (its sign of zero
    kept, subnormals kept on every device), within every scheme's bound."""
    a, b = _operands((a, b), "outer", out)
    value = narrow(widen(a._value.reshape(-1))[:, None] * widen(b._value.reshape(-1))[None, :])
    return _finished(SplitArray._wrap(value, a._dtype), out, "outer")


@implements(getattr(np.linalg, "outer", None))
def _linalg_outer(x1, x2, /):
    """The standard's ``outer``: 1-D operands only (``numpy.outer`` flattens; this refuses, as numpy's does)."""
    x1, x2 = _operands((x1, x2), "outer", names=("x1", "x2"))
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: x1 has shape {x1.shape} and x2 has shape {x2.shape}; expected "
                         "1-D arrays (numpy.outer flattens its operands, linalg.outer does not)")
    return _outer(x1, x2)


def _ufunc_options(op, options):
    """The options of contraction ufunc ``op`` (``np.matmul(a, b, casting=...)``): those that change
    nothing for a float32 result (any ``casting``, ``order`` or ``subok``; ``dtype`` and
    ``signature`` of float32) are accepted and ignored, others refused (:func:`no_options`)."""
    def float32(t):
        return t is None or (not isinstance(t, SplitDType) and np.dtype(t) == np.float32)
    signature = options.get("signature")
    types = list(signature.replace("->", "").replace(",", "")) if isinstance(signature, str) else signature
    harmless = {"casting": options.get("casting") in _CASTINGS, "order": options.get("order") in tuple("KACF"),
                "subok": isinstance(options.get("subok"), bool), "dtype": float32(options.get("dtype")),
                "signature": isinstance(types, (list, tuple)) and all(map(float32, types))}
    no_options(op, {k: v for k, v in options.items() if not harmless.get(k)})


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _vecdot(x1, x2, /, *, axis=-1, out=None, **options):
    _ufunc_options("vecdot", options)
    x1, x2 = _operands((x1, x2), "vecdot", out, ("x1", "x2"))
    for x, name in ((x1, "x1"), (x2, "x2")):
        if x.ndim == 0:
            raise ValueError(f"vecdot: {name} is a scalar (ndim 0); expected an array with ndim >= 1")
        if not -x.ndim <= axis < x.ndim:
            raise np.exceptions.AxisError(axis, x.ndim, msg_prefix=f"vecdot: axis of {name}")
    x1, x2 = (np.moveaxis(x, axis, -1) for x in (x1, x2))
    _core_lengths("...i,...i", x1, x2, "vecdot")
    return _finished(run_einsum("...i,...i->...", [x1, x2], "vecdot"), out, "vecdot")


def _core_lengths(subscripts, x1, x2, op):
    """numpy's gufunc rule for the core axes of ``subscripts`` (``"...ij,...j"``): a label of both
    operands has one length in both, 1 does not broadcast there (only the ``...`` axes do)."""
    cores = [s.split("...")[-1] for s in subscripts.split(",")]
    if any(x.ndim < len(core) for core, x in zip(cores, (x1, x2))):
        return                                     # too few axes: einsum_labels names the call
    lengths = [dict(zip(core, x.shape[x.ndim - len(core):])) for core, x in zip(cores, (x1, x2))]
    for c in set(cores[0]) & set(cores[1]):
        if lengths[0][c] != lengths[1][c]:
            raise ValueError(f"{op}: x1 has shape {x1.shape} and x2 has shape {x2.shape}; their core axis "
                             f"{c!r} ({subscripts}) has lengths {lengths[0][c]} and {lengths[1][c]}, expected "
                             "equal lengths (core axes do not broadcast)")


@implements(np.linalg.matrix_power)
def _matrix_power(a, n):
    """``a`` to the integer power ``n`` by binary powering (square, and multiply by the squares
    whose bit of ``n`` is set, lowest bit first); ``n < 0`` inverts ``a`` first (float32)."""
    a = plain(a, "matrix_power", None if not isinstance(a, SplitArray) else a._dtype)
    if not isinstance(n, numbers.Integral):
        raise TypeError(f"matrix_power: n is {n!r} of type {type(n).__name__}; expected an integer")
    n = operator.index(n)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: a has shape {a.shape}; expected a stack of square matrices")
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n == 0:
        xp = same_device("matrix_power", a._value)
        return SplitArray._wrap(xp.broadcast_to(xp.eye(a.shape[-1], dtype=np.float32), a.shape).copy(), a._dtype)
    result, square = None, a
    while n:
        if n & 1:
            result = square.copy() if result is None else matmul(result, square, op="matrix_power")
        n >>= 1
        if n:
            square = matmul(square, square, op="matrix_power")
    return result


def _gufunc(subscripts, op):
    """The handler of contraction ufunc ``op`` (``matvec``, ``vecmat``) given by ``subscripts``."""
    def run(x1, x2, /, *, out=None, **options):
        _ufunc_options(op, options)
        x1, x2 = _operands((x1, x2), op, out, ("x1", "x2"))
        _core_lengths(subscripts.split("->")[0], x1, x2, op)
        return _finished(run_einsum(subscripts, [x1, x2], op), out, op)
    return run


def _matmul_ufunc(a, b, /, *, out=None, axes=None, **options):
    _ufunc_options("matmul", options)
    return matmul(a, b, out=out, axes=axes)


implements(getattr(np.linalg, "vecdot", None))(_vecdot)
implements(getattr(np.linalg, "matmul", None))(_matmul_ufunc)
UFUNCS = {np.matmul: _matmul_ufunc}      # contraction ufuncs -> handler (used by array.ufuncs)
if hasattr(np, "vecdot"):
    UFUNCS[np.vecdot] = _vecdot
for _name, _subscripts in (("matvec", "...ij,...j->...i"), ("vecmat", "...i,...ij->...j")):
    if hasattr(np, _name):
        UFUNCS[getattr(np, _name)] = _gufunc(_subscripts, _name)


def _chain_order(shapes):
    """Split points of the product of 2-D ``shapes`` with the fewest scalar products."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1], s)
                                          for s in range(i, j))
    return split


@implements(np.linalg.multi_dot)
def _multi_dot(arrays, *, out=None):
    arrays = _operands(list(arrays), "multi_dot", out, _indexed("arrays", len(arrays)))
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: {len(arrays)} array(s); expected at least two")
    if len(arrays) == 2:                          # numpy's: dot, any ndim
        return _dotted(*arrays, "multi_dot", out)
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    arrays[0] = arrays[0][None, :] if first else arrays[0]
    arrays[-1] = arrays[-1][:, None] if last else arrays[-1]
    if any(x.ndim != 2 for x in arrays):
        raise ValueError("multi_dot: expected 2-D arrays (the first and last may be 1-D)")
    split = _chain_order([x.shape for x in arrays])

    def product(i, j):
        return arrays[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j),
                                               op="multi_dot")
    result = product(0, len(arrays) - 1)
    shape = result.shape[first:result.ndim - last]
    return _finished(result.reshape(shape), out, "multi_dot")


PROTOCOLS["matmul"] = matmul
