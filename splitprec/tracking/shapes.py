"""Shape functions, indexing and joins of tracked arrays: bounds move with their entries.

Members: indexing (``x[...]``), ``reshape transpose swapaxes squeeze expand_dims broadcast_to ravel
moveaxis concatenate stack real imag copy shape ndim size``. Each applies the same numpy
(cupy) function to the values and to the bounds, so every entry keeps its bound exactly; none of
them rounds. ``real`` and ``imag`` keep the complex bound, which bounds each component (``imag`` of real values
is 0, exactly, with an unknown bound only where the value's is unknown or infinite).
"""
import numpy as np

from .._backend import namespace
from .core import TrackedArray, context, implements
from .inputs import operand


def _same(x, fn):
    """``fn`` applied to the value and to the bound of ``x``, the bound first laid out in memory as
    the value is (``order="K"``/``"A"`` read the elements in memory order: both then agree)."""
    bound, value = x._bound, x._value
    element_strides = [tuple(s // a.itemsize for s in a.strides) for a in (bound, value)]
    if element_strides[0] != element_strides[1] and bound.shape == value.shape and value.ndim > 1:
        bound = namespace(bound).empty_like(value, dtype=bound.dtype)
        bound[...] = x._bound
    return TrackedArray._wrap(fn(value), fn(bound), x._dtype, x._confidence)


def index(x, key):
    """``x[key]``: a TrackedArray (ndim 0 for a single entry)."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, TrackedArray) for k in parts):
        raise TypeError("__getitem__: a TrackedArray is not a valid index; expected integers, "
                        "slices, None, Ellipsis, or integer/bool arrays")
    return _same(x, lambda v: v[key])


def _shape_function(name):
    function = getattr(np, name)

    def apply(a, *args, **kwargs):
        if not isinstance(a, TrackedArray):
            raise TypeError(f"{name}: expected a TrackedArray first argument, got {type(a).__name__}")
        return _same(a, lambda v: function(v, *args, **kwargs))
    return apply


for _name in ("reshape", "transpose", "swapaxes", "squeeze", "expand_dims", "broadcast_to", "ravel",
              "moveaxis", "copy"):
    implements(getattr(np, _name))(_shape_function(_name))


def _component(val, value):
    """A real component ``value`` of complex ``val`` with ``val``'s bound (it bounds each component)."""
    return TrackedArray._wrap(value, val._bound, val._dtype, val._confidence)


@implements(np.real)
def _real(val):
    return _component(val, val._value.real.copy()) if val.is_complex else val


@implements(np.imag)
def _imag(val):
    if val.is_complex:
        return _component(val, val._value.imag.copy())
    xp = namespace(val._value)                      # 0 exactly, unless the value may not exist
    return TrackedArray._wrap(xp.zeros_like(val._value), xp.where(val._bound < np.inf, 0.0, np.nan),
                              val._dtype, val._confidence)


def _join(name):
    def apply(arrays, axis=0, **options):
        if options:
            raise TypeError(f"{name}: options {sorted(options)} are not supported for tracked arrays")
        arrays = list(arrays)
        like = next(a for a in arrays if isinstance(a, TrackedArray))
        tracked = [operand(a, name, f"arrays[{i}]", like) for i, a in enumerate(arrays)]
        xp, d, confidence = context(tracked, name)
        join = getattr(xp, name)
        return TrackedArray._wrap(join([a._value for a in tracked], axis=axis),
                                  join([a._bound for a in tracked], axis=axis), d, confidence)
    return apply


for _name in ("concatenate", "stack"):
    implements(getattr(np, _name))(_join(_name))


@implements(np.shape)
def _shape(a):
    return a.shape


@implements(np.ndim)
def _ndim(a):
    return a.ndim


@implements(np.size)
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]
