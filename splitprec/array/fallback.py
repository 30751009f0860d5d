"""numpy functions SplitArrays do not implement themselves: run on the float32 values, rewrapped.

Elementwise and shape functions run in float32; contractions run in the scheme. A numpy function
with no SplitArray implementation (``max min argmax argmin std var prod cumsum median sort where
clip round pad flip vstack split diag trace moveaxis ...``) is called on the SplitArrays' float32 values (numpy on
cpu; on the gpu numpy hands it to cupy, whose float32 kernels flush subnormals). A float32 result
becomes a SplitArray of the promoted scheme (a result that shares memory with an argument
SplitArray is a view sharing its storage, so writes and the split cache stay coherent; one that
shares memory with another argument is copied); other results (bool, integer, float64 indices or
counts) come back as they are. Arguments of float64 or complex128 data next to a SplitArray raise
TypeError, as in arithmetic (nothing is promoted or rounded behind the caller's back); Python
scalars are weak, as in numpy. ``out=`` SplitArrays, by keyword or by position, take float32
results of their scheme only; a read-only ``out`` raises ValueError naming it.
``overwrite_input=True`` (``median percentile quantile ...``) is ignored: no input is written.

Refused, with a TypeError: ``REFUSED``, contractions with no split-precision implementation (use
``np.asarray(a)`` to run them in float32). The transforms of ``numpy.fft`` run ``splitprec.fft``
in the scheme, their results and ``out=`` taken as any function's here. ``IN_PLACE`` functions
write into their first argument: they run on a float64 copy, and the result must be float32-exact
(as ``a[...] = x``), or they raise TypeError.
``WRITES_UNLESS_COPY`` (``nan_to_num(a, copy=False)``) write into a SplitArray's float32 storage as
numpy's do, which counts as a write (its cached split is dropped).
"""
import functools
import inspect

import numpy as np

from .._backend import is_cupy, namespace
from ..interop import writable
from .core import PROTOCOLS, SplitArray, finish, promote, write_out
from .readonly import read_only
from .convert import exact_float32, same_device

REFUSED = frozenset([np.convolve, np.correlate, np.kron, np.cov, np.corrcoef])
IN_PLACE = frozenset([np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis])
WRITES_UNLESS_COPY = frozenset([np.nan_to_num])      # write into their first argument when copy is falsy
FFT_TRANSFORMS = ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn", "ifftn", "rfft2",
                  "irfft2", "rfftn", "irfftn", "hfft", "ihfft")
_signature = functools.cache(inspect.signature)      # of numpy functions, for _out_by_keyword


def _name(func):
    module = func.__module__.replace("numpy.", "").replace("numpy", "")
    return f"{module}.{func.__name__}" if module else func.__name__


def call(func, args, kwargs):
    """``func(*args, **kwargs)`` with SplitArray arguments (module docstring)."""
    op = _name(func)
    if func in REFUSED:
        raise TypeError(f"{op}: a contraction with no split-precision implementation for "
                        "SplitArray; expected np.asarray(a) first to run it in float32, or the "
                        "contractions that run in the scheme (docs/arrays.md)")
    args, kwargs = _out_by_keyword(func, args, kwargs)
    splits, plains = [], []
    out = kwargs.get("out")
    # a call that takes a function (np.apply_along_axis, np.piecewise) hands it views of the
    # values: read-only ones, so that it cannot write a SplitArray's storage unseen
    shown = read_only if any(callable(x) for x in (*args, *kwargs.values())) else None
    values = unwrap(args, op, splits, plains, shown)
    options = unwrap({k: v for k, v in kwargs.items() if k != "out"}, op, splits, plains, shown)
    if "out" in kwargs:
        options["out"] = out if isinstance(out, SplitArray) else plain_out(out, op, plains)
    same_device(op, *_arrays(values), *_arrays(list(options.values())))
    if options.get("overwrite_input"):        # it would reorder a SplitArray's storage, unseen
        options["overwrite_input"] = False
    d = promote(*[x._dtype for x in splits])
    if func.__module__ == "numpy.fft" and func.__name__ in FFT_TRANSFORMS:
        func = _fft(func.__name__, d, op)
    if func in IN_PLACE:
        return _in_place(func, args[0] if args else None, values, options, op)
    promoted = op if not _asks_dtype(func, args, kwargs) and (
        promotes(args) or promotes({k: v for k, v in kwargs.items() if k != "out"})) else None
    if isinstance(out, SplitArray):
        del options["out"]
        return write_out(out, narrowed(func(*values, **options), promoted), d, op)
    writable(out, op)
    target = _written_target(func, args, kwargs)
    try:
        return wrap(func(*values, **options), d, splits, plains, promoted)
    finally:
        if target is not None:
            target._written()


def _written_target(func, args, kwargs):
    """The SplitArray that ``func(*args, **kwargs)`` writes in place (``np.nan_to_num(a, copy=False)``
    writes ``a``'s storage), or None."""
    if func not in WRITES_UNLESS_COPY or not args or not isinstance(args[0], SplitArray):
        return None
    try:
        copy = _signature(func).bind(*args, **kwargs).arguments.get("copy", True)
    except TypeError:                          # a call numpy itself refuses
        return None
    return None if copy else args[0]


def _asks_dtype(func, args, kwargs):
    """True when the call names a result ``dtype`` (a float64 result is then what was asked for)."""
    try:
        return _signature(func).bind(*args, **kwargs).arguments.get("dtype") is not None
    except (TypeError, ValueError):            # no signature, or a call numpy itself refuses
        return kwargs.get("dtype") is not None


def _out_by_keyword(func, args, kwargs):
    """``(args, kwargs)`` with an ``out`` given by position (``np.cumsum(a, 0, None, out)``) moved
    to ``kwargs``: numpy would write a SplitArray's storage directly, unseen by its split cache."""
    if "out" in kwargs:
        return args, kwargs
    try:
        bound = _signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):            # no signature, or a call numpy itself refuses
        return args, kwargs
    if "out" not in bound.arguments:
        return args, kwargs
    out = bound.arguments.pop("out")
    return bound.args, dict(bound.kwargs, out=out)


def unwrap(tree, op, splits, plains, shown=None):
    """``tree`` (arguments: nested lists, tuples, dicts) with SplitArrays replaced by their values
    (collected in ``splits``, other arrays in ``plains``), or by ``shown(value)`` for numpy values;
    float64/complex128 data raises TypeError."""
    if isinstance(tree, SplitArray):
        splits.append(tree)
        return tree._value if shown is None or is_cupy(tree._value) else shown(tree._value)
    if isinstance(tree, (list, tuple)):
        return type(tree)(unwrap(x, op, splits, plains, shown) for x in tree)
    if isinstance(tree, dict):
        return {k: unwrap(v, op, splits, plains, shown) for k, v in tree.items()}
    kind = getattr(tree, "dtype", None)
    if isinstance(tree, (np.ndarray, np.generic)) or is_cupy(tree):
        if kind.kind in "fc" and np.finfo(kind).bits > 32:
            raise TypeError(f"{op}: an argument of dtype {kind} is not accepted with a SplitArray "
                            "(it would be rounded to float32 or promote the result); expected "
                            "float32 data (sp.asarray(x) or x.astype(numpy.float32))")
        if not isinstance(tree, np.generic):
            plains.append(tree)
    return tree


def plain_out(out, op, plains):
    """An ``out=`` that is not a SplitArray (an array, or a tuple of them), collected in ``plains``:
    any dtype numpy's casting allows, as for numpy's own (float64 takes a float32 result exactly);
    a numpy scalar raises TypeError naming ``out``, as numpy refuses it."""
    for o in out if isinstance(out, tuple) else (out,):
        if isinstance(o, np.generic):
            raise TypeError(f"{op}: out is a numpy scalar ({type(o).__name__}); expected an array "
                            "(or a SplitArray) to write the result into")
        if isinstance(o, np.ndarray) or is_cupy(o):
            plains.append(o)
    return out


def promotes(tree):
    """True when ``tree`` (arguments: nested lists, tuples, dicts) holds data that numpy promotes
    float32 with to float64: (u)int32/(u)int64 arrays and numpy scalars (Python ints are weak, and
    int8/int16 give float32), and Python numbers inside a list (numpy reads ``[0.5]`` as float64)."""
    if isinstance(tree, list) and any(isinstance(x, (int, float)) and not isinstance(x, bool) for x in tree):
        return True
    if isinstance(tree, (list, tuple)):
        return any(promotes(x) for x in tree)
    if isinstance(tree, dict):
        return any(promotes(x) for x in tree.values())
    kind = getattr(tree, "dtype", None)
    return (isinstance(tree, (np.ndarray, np.generic)) or is_cupy(tree)) and kind.kind in "iu" and \
        np.result_type(np.float32, kind) == np.float64


def narrowed(result, promoted):
    """A float64 array ``result`` that arguments of ``promoted`` (the operation's name, or None)
    promoted from float32 data (:func:`promotes`), back in float32, the one input rule's way: exact
    (a selection, as ``np.where`` or ``np.concatenate``), or a TypeError naming the value."""
    if promoted is None or not (isinstance(result, np.ndarray) or is_cupy(result)) or result.dtype != np.float64:
        return result
    value = result.astype(np.float32)
    if not bool((value == result)[~namespace(result).isnan(result)].all()):
        first = result[(value != result) & ~namespace(result).isnan(result)].ravel()[0].item()
        raise TypeError(f"{promoted}: numpy promoted the result to float64 (integer data, or Python numbers "
                        f"in a list), and it holds a value float32 cannot hold exactly ({first!r}); expected "
                        "data float32 holds exactly, or convert it first (numpy.float32(x))")
    return value


def wrap(result, d, splits, plains, promoted=None):
    """``result`` with float32 arrays as SplitArrays of scheme ``d`` (module docstring), and float64
    arrays that integer arguments of ``promoted`` promoted to (:func:`narrowed`)."""
    if isinstance(result, (list, tuple)):
        items = [wrap(r, d, splits, plains, promoted) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if any(result is p for p in plains):
        return result                                   # an out= array, returned as numpy does
    result = narrowed(result, promoted)
    if not (isinstance(result, np.ndarray) or is_cupy(result)) or result.dtype != np.float32:
        return result
    for x in splits:
        if result is x._value:
            return x
    xp = same_device("wrap", result)
    if any(xp.may_share_memory(result, p) for p in plains):
        result = result.copy()
    owner = next((x for x in splits if xp.may_share_memory(result, x._value)), None)
    return finish(SplitArray._wrap(result, d, None if owner is None else owner._storage))


def _arrays(values):
    """The numpy and cupy arrays in ``values``, nested lists and tuples (``np.concatenate([a, b])``) included."""
    found = []
    for v in values:
        if isinstance(v, (list, tuple)):
            found += _arrays(v)
        elif isinstance(v, np.ndarray) or is_cupy(v):
            found.append(v)
    return found


def _fft(name, d, op):
    """``splitprec.fft``'s transform ``name`` in scheme ``d``, called as numpy's other functions are
    (so a float32 result, of ``irfft*`` or ``hfft``, is a SplitArray and an ``out=`` SplitArray is
    written through ``write_out``)."""
    from .. import fft
    transform = getattr(fft, name, None)
    if transform is None:
        raise TypeError(f"{op}: splitprec.fft has no {name}; expected one of "
                        f"{', '.join(n for n in FFT_TRANSFORMS if hasattr(fft, n))}")
    return functools.partial(transform, dtype=d)


def _in_place(func, target, values, options, op):
    """``func`` writing into its first argument: into a SplitArray through a float64 copy, stored
    back only if every value is float32-exact; into another array as numpy does."""
    if not isinstance(target, SplitArray):
        return func(*values, **options)
    wide = target._value.astype(np.float64)
    func(wide, *values[1:], **options)
    target._value[...] = exact_float32(wide, op, "the written values")
    target._written()


PROTOCOLS["function"] = call
