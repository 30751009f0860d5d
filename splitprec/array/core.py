"""SplitArray: numpy-like arrays of a split-precision scheme, on numpy (cpu) or cupy (gpu) storage.

A SplitArray stores the float32 value of its data and a scheme (``dtype``, a
:class:`~splitprec.SplitDType`). Elementwise operations are numpy's float32 operations on that
value; contractions (``@``, ``np.matmul``, ``np.dot``, ``np.tensordot``, ``np.einsum``) run
:func:`splitprec.matmul` in the scheme, each operand split once and its parts cached until a
write. docs/arrays.md states the rules: caching, what data is accepted (nothing is rounded
silently), promotion, devices.

Examples
--------
>>> import numpy as np, splitprec as sp
>>> a = sp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype="bf16x9")
>>> a
SplitArray([[1., 2.],
            [3., 4.]], dtype=bf16x9, device=cpu)
>>> a @ a.T
SplitArray([[ 5., 11.],
            [11., 25.]], dtype=bf16x9, device=cpu)
>>> (a * 0.5 + sp.ones((2, 2), dtype="tf32x3")).dtype.name
'bf16x9'
>>> a.sum(axis=0), a[1, 1]
(SplitArray([4., 6.], dtype=bf16x9, device=cpu), np.float32(4.0))
>>> np.asarray(np.sqrt(a[0]))
array([1.       , 1.4142135], dtype=float32)
>>> sp.asarray([0.1], dtype="bf16x9")
Traceback (most recent call last):
TypeError: asarray: x holds a value that float32 cannot hold exactly (0.1); round explicitly, e.g. numpy.float32(x)
"""
import numbers

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .._backend import device_name, is_cupy, namespace
from ..dtypes import SplitDType, cheapest, dtype as get_dtype, dtypes
from ..formats import narrow, widen
from ..linalg import _raw_matmul, _scheme as linalg_scheme
from ..split import Parts, split

_DEVICES = ("cpu", "gpu")
HANDLED = {}             # numpy function -> SplitArray implementation (filled by array.functions)
_FLOAT_UFUNCS = frozenset([
    np.add, np.subtract, np.multiply, np.divide, np.power, np.negative, np.positive, np.absolute,
    np.sqrt, np.cbrt, np.square, np.reciprocal, np.exp, np.exp2, np.expm1, np.log, np.log2,
    np.log10, np.log1p, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.hypot, np.maximum,
    np.minimum, np.fmax, np.fmin, np.floor, np.ceil, np.trunc, np.rint, np.sign, np.copysign,
    np.floor_divide, np.remainder, np.fmod])
_BOOL_UFUNCS = frozenset([np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                          np.greater_equal, np.isfinite, np.isinf, np.isnan, np.signbit])


class _Storage:
    """Version counter shared by an array and its views; a write bumps it, staling cached parts."""

    __slots__ = ("version",)

    def __init__(self):
        self.version = 0


def _reduction(function, doc):
    """A SplitArray method ``a.name(axis=None, keepdims=False)`` calling numpy's ``function``."""
    def method(self, axis=None, keepdims=False):
        return function(self, axis=axis, keepdims=keepdims)
    method.__doc__ = doc
    return method


class SplitArray(NDArrayOperatorsMixin):
    """An array of a split-precision scheme; create one with :func:`asarray`, :func:`zeros`, ...

    See the module docstring for storage, caching, promotion and devices.
    """

    __slots__ = ("_value", "_dtype", "_storage", "_source", "_cache")

    def __init__(self, x, dtype=None, *, device=None):
        src = asarray(x, dtype, device=device)
        self._value = src._value.copy() if src is x else src._value
        self._dtype = src._dtype
        self._storage, self._source, self._cache = _Storage(), None, {}

    @classmethod
    def _wrap(cls, value, d, storage=None, source=None):
        """A SplitArray over float32 ``value`` (no copy); views pass their base's ``storage``."""
        new = cls.__new__(cls)
        new._value, new._dtype = value, d
        new._storage = _Storage() if storage is None else storage
        new._source = None if source is None else (source[0], source[1], new._storage.version)
        new._cache = {}
        return new

    # -- attributes ------------------------------------------------------------------------------
    shape = property(lambda self: self._value.shape, doc="Tuple of array dimensions.")
    ndim = property(lambda self: self._value.ndim, doc="Number of dimensions.")
    size = property(lambda self: self._value.size, doc="Number of elements.")
    dtype = property(lambda self: self._dtype, doc="The scheme, a SplitDType.")
    device = property(lambda self: "gpu" if is_cupy(self._value) else "cpu",
                      doc="'cpu' (numpy storage) or 'gpu' (cupy storage).")
    T = property(lambda self: self.transpose(), doc="The array with its axes reversed (a view).")

    @property
    def mT(self):
        """The array with its last two axes swapped (a view); needs ndim >= 2."""
        if self.ndim < 2:
            raise ValueError(f"mT: the array has ndim {self.ndim}; matrix transpose needs ndim >= 2")
        return self.swapaxes(-1, -2)

    @property
    def terms(self):
        """The parts (hi, mid, lo) of ``split(value, dtype)``, cached; for ``pow2`` schemes (every
        float32 scheme) they are scaled by one power of two for the whole array, which puts the
        largest magnitude into ``[2**s, 2**(s+1))``, ``s = dtype.scale_exponent(1)``."""
        return self._parts(self._dtype, None).terms

    def _cached(self, key, make, transposed=None):
        """``make()``, kept under ``key`` until the array (or one sharing its storage) is written:
        the parts of a scheme here, the device operands of the GPU engines (``splitprec.engines.cuda.split``).
        ``transposed``: the key of the same value in an array whose 2-D transpose this one is (as
        the GPU engines' parts of one side of a product are the other side's parts of the
        transpose); a ``T`` view keeps it there, shared with its base."""
        if transposed is not None and self._source is not None and _transposes(self._value, self._source[0]._value):
            return self._source[0]._cached(transposed, make)
        version = self._storage.version
        hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = make()
        self._cache[key] = (version, value)
        return value

    def _parts(self, d, axis):
        """Cached parts of the value in scheme ``d``, split along ``axis`` (C-contiguous terms)."""
        key = (d.name, None if d.scaling == "none" or axis is None else axis % self.ndim)

        def make():
            if self._source is not None and d == self._dtype and d.scaling == "none" \
                    and self._source[2] == self._storage.version:
                base, view, _ = self._source
                parts = Parts(tuple(view(t) for t in base._parts(d, None).terms))
            else:
                parts = split(self._value, d, axis=axis)
            xp = namespace(self._value)
            return Parts(tuple(xp.ascontiguousarray(t) for t in parts.terms), parts.exponent)

        return self._cached(key, make)

    def _written(self):
        self._storage.version += 1
        self._cache.clear()

    # -- conversion ------------------------------------------------------------------------------
    def astype(self, dtype):
        """A copy in another scheme (a SplitArray) or as a numpy/cupy array of a numpy dtype."""
        if isinstance(dtype, SplitDType) or (isinstance(dtype, str) and _is_scheme_name(dtype)):
            return SplitArray._wrap(self._value.copy(), _scheme(dtype, "astype"))
        try:
            return self._value.astype(np.dtype(dtype))
        except TypeError:
            raise TypeError(f"astype: unknown dtype {dtype!r}; expected a split scheme (one of "
                            f"{', '.join(map(repr, _scheme_names()))}) or a numpy dtype") from None

    def copy(self):
        """A copy with its own storage; the cached parts come along (they are still valid)."""
        new = SplitArray._wrap(self._value.copy(), self._dtype)
        version = self._storage.version
        new._cache = {k: (0, p) for k, (v, p) in self._cache.items() if v == version}
        return new

    def to_numpy(self):
        """The value as a new numpy float32 array (a device-to-host copy on gpu)."""
        return self._value.get() if is_cupy(self._value) else self._value.copy()

    get = to_numpy

    def __array__(self, dtype=None, copy=None):
        if is_cupy(self._value):
            raise TypeError("SplitArray.__array__: the data lives on the gpu (cupy storage) and "
                            "implicit conversion to a NumPy array is not allowed; use .get() or "
                            ".to_numpy()")
        if dtype is not None and np.dtype(dtype) != np.float32:
            if copy is False:
                raise ValueError(f"SplitArray.__array__: dtype {np.dtype(dtype)} needs a copy of "
                                 "the float32 value, but copy=False")
            return self._value.astype(dtype)
        if copy:
            return self._value.copy()
        view = self._value.view()
        view.flags.writeable = False       # writes must go through the SplitArray (cache)
        return view

    def __dlpack__(self, **kwargs):
        return self._value.__dlpack__(**{k: v for k, v in kwargs.items() if v is not None})

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        if not is_cupy(self._value):
            raise AttributeError("__cuda_array_interface__: the SplitArray lives on the cpu; only "
                                 "gpu (cupy) storage exports it")
        return self._value.__cuda_array_interface__

    # -- python protocol -------------------------------------------------------------------------
    def __repr__(self):
        host = self.to_numpy()
        body = np.array2string(host, separator=", ", prefix="SplitArray(")
        shape = f", shape={self.shape}" if host.size == 0 and self.shape != (0,) else ""
        return f"SplitArray({body}{shape}, dtype={self._dtype.name}, device={self.device})"

    def __str__(self):
        return f"{self.to_numpy()} ({self._dtype.name}, {self.device})"

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d SplitArray")
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return bool(self._value)

    # -- indexing --------------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _index(key, "__getitem__")
        return _finish(self._view(lambda v: v[key]))

    def __setitem__(self, key, value):
        key = _index(key, "__setitem__")
        data = _data_on(value, self.device, "__setitem__", "value")
        self._value[key] = data
        self._written()

    def _view(self, fn):
        """``fn`` (a shape or index operation) applied to the value; shares storage and parts."""
        return SplitArray._wrap(fn(self._value), self._dtype, self._storage, (self, fn))

    # -- shape methods ---------------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        """The array in a new shape (numpy's ``reshape``)."""
        shape = shape[0] if len(shape) == 1 else shape
        return self._view(lambda v: v.reshape(shape, order=order))

    def transpose(self, *axes):
        """The array with permuted axes (numpy's ``transpose``)."""
        axes = axes[0] if len(axes) == 1 else (axes or None)
        return self._view(lambda v: v.transpose() if axes is None else v.transpose(axes))

    def swapaxes(self, axis1, axis2):
        """The array with two axes interchanged."""
        return self._view(lambda v: v.swapaxes(axis1, axis2))

    def squeeze(self, axis=None):
        """The array without (the given) length-one axes."""
        return self._view(lambda v: v.squeeze(axis))

    def ravel(self):
        """The array flattened to one dimension."""
        return self._view(lambda v: v.ravel())

    # -- reductions: numpy's methods (accuracy in splitprec.array.functions) ----------------------
    sum = _reduction(np.sum, "Compensated pairwise sum (``np.sum``).")
    mean = _reduction(np.mean, "Mean from the compensated sum (``np.mean``).")
    max = _reduction(np.max, "Largest element (``np.max``).")
    min = _reduction(np.min, "Smallest element (``np.min``).")
    argmax = _reduction(np.argmax, "Index of the largest element (``np.argmax``).")
    argmin = _reduction(np.argmin, "Index of the smallest element (``np.argmin``).")

    # -- numpy protocols -------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__" or kwargs or ufunc not in _FLOAT_UFUNCS | _BOOL_UFUNCS | {np.matmul}:
            return NotImplemented
        if any(_foreign(x) for x in inputs + (out or ())):
            return NotImplemented
        op = ufunc.__name__
        if ufunc is np.matmul:
            return matmul(*inputs, out=None if out is None else out[0], op=op)
        values = [_ufunc_operand(x, op) for x in inputs]
        xp = _namespace(op, *values)
        shapes = [getattr(v, "shape", ()) for v in values]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"{op}: operands of shapes {', '.join(map(str, shapes))} do not "
                             "broadcast; expected shapes compatible under numpy's rules") from None
        result = ufunc(*values) if xp is np else _cupy_ufunc(op, values, narrowed=ufunc in _FLOAT_UFUNCS)
        if ufunc in _BOOL_UFUNCS:
            if out is not None:
                raise TypeError(f"{op}: out= is not supported for a bool result; expected out=None")
            return result
        d = promote(*[x._dtype for x in inputs if isinstance(x, SplitArray)])
        return _finish(SplitArray._wrap(result, d)) if out is None else \
            _write_out(out[0], result, d, op)

    def __array_function__(self, func, types, args, kwargs):
        handler = HANDLED.get(func)
        if handler is None or not all(issubclass(t, SplitArray) or t.__name__ == "ndarray"
                                      for t in types):
            return NotImplemented
        return handler(*args, **kwargs)

    @staticmethod
    def __splitprec_matmul__(a, b, /, out=None, *, dtype=None, precision=None):
        """``splitprec.matmul`` with a SplitArray operand (called by ``splitprec.linalg``)."""
        return matmul(a, b, out=out, dtype=dtype, precision=precision,
                                        op="matmul")


def _transposes(view, base):
    """True when cupy ``view`` is 2-D ``base`` with its two axes swapped (the same data)."""
    return (view.ndim == base.ndim == 2 and view.shape == base.shape[::-1]
            and view.strides == base.strides[::-1] and view.data.ptr == base.data.ptr)


# -- helpers shared with array.functions ----------------------------------------------------------

def promote(*schemes):
    """The scheme of a result from operands of ``schemes`` (table in the module docstring)."""
    return min(schemes, key=lambda d: (d.product_error, -d.exact_span(), d.cost, d.name))


def _scheme_names():
    return [n for n in dtypes() if get_dtype(n).target == "float32"]


def _is_scheme_name(name):
    try:
        get_dtype(name)
    except ValueError:
        return False
    return True


def _scheme(dtype, op):
    """The SplitDType for a SplitArray (float32 target); None means the default fp32 scheme."""
    d = cheapest("fp32") if dtype is None else get_dtype(dtype)
    if d.target != "float32":
        raise ValueError(f"{op}: scheme {d.name!r} targets {d.target}; a SplitArray holds a "
                         f"float32-target scheme, one of {', '.join(map(repr, _scheme_names()))}")
    return d


def _namespace(op, *arrays):
    """numpy or cupy for the arrays among ``arrays``, or a ValueError naming ``op``."""
    try:
        return namespace(*[x for x in arrays if isinstance(x, np.ndarray) or is_cupy(x)])
    except ValueError:
        raise ValueError(f"{op}: operands live on different devices (cpu and gpu); move them to "
                         "one device first, e.g. sp.asarray(x, device='gpu')") from None


def _foreign(x):
    """True for an operand of a type that may implement the operation itself."""
    return hasattr(x, "__array_ufunc__") and not (
        isinstance(x, (SplitArray, np.ndarray, np.generic)) or is_cupy(x))


def _cupy_ufunc(op, values, *, narrowed):
    """cupy's ufunc ``op`` in float64 on exactly widened float32 operands, rounded once to float32
    when ``narrowed``: cupy compiles its kernels with ``-ftz=true``, which would flush float32
    subnormals. Weak Python scalars become float32 first, as numpy's do (NEP 50)."""
    import cupy
    wide = [float(np.float32(v)) if isinstance(v, (int, float)) else widen(v.astype(np.float32))
            for v in values]
    result = getattr(cupy, op)(*wide)
    return narrow(result) if narrowed else result


def _ufunc_operand(x, op):
    """A ufunc operand: a SplitArray's value, a weak Python scalar, or a float32/float16 array."""
    if isinstance(x, SplitArray):
        return x._value
    if isinstance(x, (int, float)) and not isinstance(x, np.generic):
        return x
    kind = getattr(x, "dtype", None)
    if kind in (np.float32, np.float16):
        return x
    raise TypeError(f"{op}: an operand of type {type(x).__name__} with dtype {kind} is not "
                    "accepted; expected a SplitArray, a float32/float16 array or a Python "
                    "int/float (convert explicitly, e.g. sp.asarray(x) or x.astype(numpy.float32))")


def _as_float32(x, op, name):
    """``x`` as a float32 numpy/cupy array, never rounded (module docstring), or a TypeError."""
    if isinstance(x, SplitArray):
        return x._value
    from_python = not (isinstance(x, (np.ndarray, np.generic)) or is_cupy(x))
    if from_python and not isinstance(x, (numbers.Real, list, tuple)):
        raise TypeError(f"{op}: {name} of type {type(x).__name__} is not accepted; expected a "
                        "numpy/cupy array, a SplitArray, a Python scalar or a (nested) list")
    if not is_cupy(x):
        x = np.asarray(x)
    if x.dtype in (np.float32, np.float16):
        return x.astype(np.float32, copy=False)
    if x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and not from_python):
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; expected float32 or float16 data, or "
                        "integers, bools and Python floats that float32 holds exactly (convert "
                        f"explicitly, e.g. {name}.astype(numpy.float32))")
    return _exact_float32(x, op, name)


def _data_on(x, device, op, name):
    """Data ``x`` (accepted as by ``_as_float32``) on ``device``: scalars and lists move there,
    arrays must already be there (ValueError otherwise)."""
    data = _as_float32(x, op, name)
    if isinstance(x, (SplitArray, np.ndarray)) or is_cupy(x):
        if device_name(data) != device:
            raise ValueError(f"{op}: {name} lives on the {device_name(data)} and the array on the "
                             f"{device}; expected both on one device (sp.asarray(x, device=...))")
        return data
    return _move(data, device, op)


def _exact_float32(x, op, name):
    """Integer, bool or Python-float data ``x`` as float32, or a TypeError if any value rounds."""
    xp = namespace(x)
    with np.errstate(over="ignore", invalid="ignore"):
        value, wide = x.astype(np.float32), x.astype(np.float64)
        exact = (value.astype(np.float64) == wide) | xp.isnan(wide)
        if x.dtype.kind in "iu":
            exact &= xp.abs(wide) < 2.0 ** 53
    if not bool(exact.all()):
        raise TypeError(f"{op}: {name} holds a value that float32 cannot hold exactly "
                        f"({x[~exact].ravel()[0].item()!r}); round explicitly, e.g. "
                        f"numpy.float32({name})")
    return value


def _index(key, op):
    """``key`` for the value, or a TypeError for SplitArray indices (float data)."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, SplitArray) for k in parts):
        raise TypeError(f"{op}: a SplitArray is not a valid index; expected integers, slices, "
                        "None, Ellipsis, or integer/bool arrays")
    return key


def _finish(x):
    """A SplitArray result, or its scalar when it has ndim 0 (module docstring)."""
    if not isinstance(x, SplitArray) or x.ndim:
        return x
    return x._value if is_cupy(x._value) else x._value[()]


def _write_out(out, value, d, op):
    """Store ``value`` (scheme ``d``) into the SplitArray ``out`` of an in-place operation."""
    if not isinstance(out, SplitArray):
        raise TypeError(f"{op}: out must be a SplitArray, got {type(out).__name__}")
    if out._dtype != d:
        raise TypeError(f"{op}: the result has scheme {d.name} but out has scheme "
                        f"{out._dtype.name}; an in-place operation keeps its target's scheme "
                        f"(expected operands that promote to {out._dtype.name})")
    if value.shape != out.shape:
        raise ValueError(f"{op}: out has shape {out.shape} but the result has shape "
                         f"{value.shape}; expected equal shapes")
    _namespace(op, out._value, value)
    out._value[...] = value
    out._written()
    return out


# -- contractions -----------------------------------------------------------------------------------

def matmul(a, b, *, out=None, dtype=None, precision=None, op="matmul"):
    """``a @ b`` through ``splitprec.matmul``'s engine with the cached parts of SplitArrays."""
    if dtype is None and precision is None:
        dtype = promote(*[x._dtype for x in (a, b) if isinstance(x, SplitArray)])
    values = [x._value if isinstance(x, SplitArray) else x for x in (a, b)]
    d = linalg_scheme(dtype, precision, op, on_gpu=_namespace(op, *values) is not np)
    splitters = [x._parts if isinstance(x, SplitArray) else None for x in (a, b)]
    caches = [x._cached if isinstance(x, SplitArray) else None for x in (a, b)]
    value = _raw_matmul(*values, out=None, dtype=d, precision=None, op=op, splitters=splitters, caches=caches)
    return _finish(SplitArray._wrap(value, d)) if out is None else _write_out(out, value, d, op)


# -- creation --------------------------------------------------------------------------------------

def _move(value, device, op):
    """``value`` on ``device`` (None: where it is); crossing devices is an explicit copy."""
    if device is not None and device not in _DEVICES:
        raise ValueError(f"{op}: unknown device {device!r}; expected 'cpu' or 'gpu'")
    if device is None or device == device_name(value):
        return value
    if device == "cpu":
        return value.get()
    import cupy
    return cupy.asarray(value)


def asarray(x, dtype=None, *, device=None):
    """A SplitArray of scheme ``dtype`` holding ``x``.

    Parameters
    ----------
    x : SplitArray, numpy/cupy array, Python scalar or nested list
        The data; what is accepted without rounding is stated in the module docstring.
    dtype : str or SplitDType, optional
        Scheme name, e.g. ``"bf16x9"``. Default: ``x``'s scheme for a SplitArray, otherwise the
        cheapest fp32-class scheme (as :func:`splitprec.matmul`).
    device : {"cpu", "gpu"}, optional
        Storage: numpy (cpu) or cupy (gpu). Default: where ``x`` is (lists and scalars: cpu).

    Returns
    -------
    SplitArray
        ``x`` itself when it is a SplitArray of that scheme and device; otherwise a new array
        that owns a copy of the data.

    Raises
    ------
    TypeError
        float64 arrays, values float32 cannot hold exactly, complex or non-numeric data.
    ValueError
        Unknown scheme or device.

    Accuracy: exact (no value is rounded), checked by
    ``tests/test_array.py::test_asarray_rejects_values_float32_cannot_hold``.
    """
    d = x._dtype if isinstance(x, SplitArray) and dtype is None else _scheme(dtype, "asarray")
    if isinstance(x, SplitArray) and d == x._dtype and device in (None, x.device):
        return x
    data = _as_float32(x, "asarray", "x")
    value = _move(data, device, "asarray")
    return SplitArray._wrap(value.copy() if value is data else value, d)
