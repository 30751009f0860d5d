"""numpy ufuncs on SplitArrays (``SplitArray.__array_ufunc__``).

- The arithmetic ufuncs ``FLOAT_UFUNCS`` and ``BOOL_UFUNCS``, called plainly, take the operands of
  the promotion table in docs/arrays.md and give numpy's float32 results bit for bit; on the gpu
  they are evaluated in float64 from the exactly widened value and rounded once (cupy's float32
  kernels flush subnormals).
- ``matmul``, ``vecdot``, ``matvec`` and ``vecmat`` are contractions: they run in the scheme
  (:mod:`splitprec.array.contractions`).
- Everything else (other ufuncs, the methods ``reduce accumulate reduceat outer at``, options
  such as ``where=`` and ``dtype=``) is numpy's (cupy's) ufunc on the float32 values, as
  :mod:`splitprec.array.fallback` runs other numpy functions: float64 data is refused, float32
  results are SplitArrays of the promoted scheme, ``out=`` SplitArrays take float32 results only,
  and a read-only ``out`` raises ValueError naming it.
- ``a == None`` and ``a != None`` (also strings, and objects of types no array protocol describes)
  compare elementwise unequal, as numpy's do.
"""
import numpy as np

from ..formats import narrow, widen
from ..interop import writable
from .core import PROTOCOLS, SplitArray, finish, result_scheme, unknown, write_out
from .convert import as_float32, on_device, same_device
from . import contractions
from .fallback import plain_out, promotes, unwrap, wrap

FLOAT_UFUNCS = frozenset([
    np.add, np.subtract, np.multiply, np.divide, np.power, np.negative, np.positive, np.absolute,
    np.sqrt, np.cbrt, np.square, np.reciprocal, np.exp, np.exp2, np.expm1, np.log, np.log2,
    np.log10, np.log1p, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.hypot, np.maximum,
    np.minimum, np.fmax, np.fmin, np.floor, np.ceil, np.trunc, np.rint, np.sign, np.copysign,
    np.floor_divide, np.remainder, np.fmod])
BOOL_UFUNCS = frozenset([np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                         np.greater_equal, np.isfinite, np.isinf, np.isnan, np.signbit])


def array_ufunc(ufunc, method, inputs, out, kwargs):
    """``ufunc.method(*inputs, out=out, **kwargs)`` with SplitArray operands (module docstring)."""
    if any(_foreign(x) for x in inputs + (out or ())):
        return NotImplemented
    op = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    if ufunc in contractions.UFUNCS and method == "__call__":
        return contractions.UFUNCS[ufunc](*inputs, out=None if out is None else out[0], **kwargs)
    if ufunc in (np.equal, np.not_equal) and method == "__call__" and any(_opaque(x) for x in inputs):
        return _unequal(ufunc, inputs, op)
    plain_call = method == "__call__" and not kwargs and ufunc in FLOAT_UFUNCS | BOOL_UFUNCS
    if plain_call and (out is None or all(isinstance(o, SplitArray) for o in out)):
        return _arithmetic(ufunc, inputs, out, op)
    return _generic(ufunc, method, inputs, out, kwargs, op)


def _arithmetic(ufunc, inputs, out, op):
    device = next(x.device for x in inputs + (out or ()) if isinstance(x, SplitArray))
    values = [_operand(x, op, f"x{i + 1}", device) for i, x in enumerate(inputs)]
    xp = same_device(op, *values)
    shapes = [getattr(v, "shape", ()) for v in values]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{op}: operands of shapes {', '.join(map(str, shapes))} do not "
                         "broadcast; expected shapes compatible under numpy's rules") from None
    result = ufunc(*values) if xp is np else _cupy_ufunc(op, values, narrowed=ufunc in FLOAT_UFUNCS)
    d = result_scheme(inputs, out or ())
    if out is not None:
        return write_out(out[0], result, d, op)
    return result if ufunc in BOOL_UFUNCS else finish(SplitArray._wrap(result, d))


def _generic(ufunc, method, inputs, out, kwargs, op):
    splits, plains = [], []
    values = unwrap(inputs, op, splits, plains)
    if method == "__call__" and any(t.startswith("f" * ufunc.nin + "->") for t in ufunc.types):
        # integer data that numpy would promote to float64, lists and complex Python numbers are
        # read by the one input rule (float32, exactly, or TypeError), as in plain arithmetic
        values = [as_float32(v, op, f"x{i + 1}") if promotes(v) or isinstance(v, (list, tuple, complex)) else v
                  for i, v in enumerate(values)]
    options = unwrap(kwargs, op, splits, plains)
    outs = () if out is None else out
    into = any(isinstance(o, SplitArray) for o in outs)
    if into and not all(o is None or isinstance(o, SplitArray) for o in outs):
        raise TypeError(f"{op}: out mixes SplitArrays and other arrays; expected SplitArrays "
                        "(or None) only")
    if outs and not into:
        options["out"] = plain_out(outs, op, plains)
        for o in outs:
            writable(o, op)
    elif into and method == "__call__" and "where" in options:
        options["out"] = None            # where= without out: the SplitArray out is written below
    d = result_scheme(splits, outs)
    same_device(op, *values, *options.values())
    result = getattr(ufunc, method)(*values, **options)
    if method == "at":
        if isinstance(inputs[0], SplitArray):
            inputs[0]._written()
        return result
    if not into:
        return result if outs else wrap(result, d, splits, plains)
    results = result if ufunc.nout > 1 else (result,)
    where = options.get("where", True) if method == "__call__" else True
    done = [wrap(r, d, splits, plains) if o is None else write_out(o, r, d, op, where)
            for o, r in zip(outs, results)]
    return tuple(done) if ufunc.nout > 1 else done[0]


def _unequal(ufunc, inputs, op):
    """``==`` / ``!=`` with None or a string: elementwise unequal, as in numpy."""
    arrays = [x._value if isinstance(x, SplitArray) else x for x in inputs if not _opaque(x)]
    xp = same_device(op, *arrays)
    shape = np.broadcast_shapes(*[np.shape(x) if xp is np else x.shape for x in arrays])
    result = xp.full(shape, ufunc is np.not_equal)
    return result[()] if xp is np and not shape else result          # a 0-d comparison: numpy's bool


def _opaque(x):
    """None, strings and objects of types no array protocol describes: never equal to a number."""
    return x is None or isinstance(x, (str, bytes)) or unknown(x)


def _foreign(x):
    """True for an operand of a type that may implement the operation itself."""
    return hasattr(x, "__array_ufunc__") and not (
        isinstance(x, (SplitArray, np.ndarray, np.generic)) or type(x).__module__.split(".")[0] == "cupy")


def _cupy_ufunc(op, values, *, narrowed):
    """cupy's ufunc ``op`` in float64 on exactly widened float32 operands, rounded once to float32
    when ``narrowed``: cupy compiles its kernels with ``-ftz=true``, which would flush float32
    subnormals. Weak Python scalars become float32 first, as numpy's do (NEP 50)."""
    import cupy
    wide = [float(np.float32(v)) if isinstance(v, (int, float)) else widen(v.astype(np.float32))
            for v in values]
    result = getattr(cupy, op)(*wide)
    return narrow(result) if narrowed else result


def _operand(x, op, name, device):
    """An arithmetic operand: a SplitArray's value, a weak Python scalar (NEP 50), or anything else
    by the one input rule of ``as_float32`` (lists and scalars moved to ``device``)."""
    if isinstance(x, SplitArray):
        return x._value
    if isinstance(x, (int, float)) and not isinstance(x, np.generic):
        return x
    placed = not isinstance(x, (list, tuple, np.generic))
    return on_device(as_float32(x, op, name), device, op, name, placed=placed)


PROTOCOLS["ufunc"] = array_ufunc
