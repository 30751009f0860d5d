"""SplitArray: numpy-like arrays of a split-precision scheme, on numpy (cpu) or cupy (gpu) storage.

A SplitArray stores the float32 value of its data and a scheme (``dtype``, a
:class:`~splitprec.SplitDType`). Elementwise and shape functions run in float32 on that value;
contractions (``@``, ``np.matmul``, ``np.dot``, ``np.einsum``, ...) run :func:`splitprec.matmul`
in the scheme, each operand split once and its parts cached until a write. docs/arrays.md states
the rules: caching and exports (no stale split), what data is accepted (nothing is rounded
silently), promotion, devices, the numpy functions and the Array API namespace.

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
import functools
import numbers

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .._backend import dask_layer, device_name, is_cupy, is_dask, namespace
from ..dtypes import SplitDType, dtype as get_dtype
from ..interop import writable
from ..split import Parts, split
from .convert import as_float32, is_scheme_name, move, on_device, scheme, scheme_names, same_device
from .readonly import read_only

HANDLED = {}             # numpy function -> SplitArray implementation (filled by array.functions)
# The protocols' implementations, which build on SplitArray and so live in the modules above it:
# "ufunc" (array.ufuncs), "function" (array.fallback), "matmul" (array.contractions), "namespace"
# (splitprec.array_api); each module registers itself here when imported.
PROTOCOLS = {}
API_VERSIONS = ("2021.12", "2022.12", "2023.12")


class _Storage:
    """What an array shares with its views. A write bumps ``version``, staling cached parts.
    ``exported`` is set once a protocol handed out a writable alias of the data (DLPack, the
    CUDA array interface); from then on a cached split is reused only while the value still
    equals the snapshot taken when the split was made (docs/arrays.md, "No stale split")."""

    __slots__ = ("version", "exported")

    def __init__(self):
        self.version, self.exported = 0, False


def _method(function, doc):
    """A SplitArray method ``a.name(*args, **kwargs)`` calling numpy's ``function(a, ...)``."""
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    method.__doc__ = doc
    return method


def _rebuild(value, name, parts=None):
    """Unpickle a SplitArray (``SplitArray.__reduce__``), with the current host parts it had. Arrays
    that do not own their memory (pickle protocol 5 hands out-of-band buffers back as views of the
    sender's memory) are copied: a pickle is a copy."""
    new = SplitArray._wrap(_owned(value), get_dtype(name))
    new._cache = {key: (0, Parts(tuple(_owned(t) for t in kept.terms), _owned(kept.exponent)))
                  for key, kept in (parts or {}).items()}
    return new


def _owned(x):
    """``x``, or a copy of numpy array ``x`` unless it owns its memory and is writable."""
    return x if not isinstance(x, np.ndarray) or (x.flags.owndata and x.flags.writeable) else x.copy()


class SplitArray(NDArrayOperatorsMixin):
    """An array of a split-precision scheme; create one with :func:`asarray`, :func:`zeros`, ...

    See the module docstring for storage, caching, promotion and devices.
    """

    __slots__ = ("_value", "_dtype", "_storage", "_source", "_cache", "_snapshot")

    def __init__(self, x, dtype=None, *, device=None):
        src = asarray(x, dtype, device=device)
        self._value = src._value.copy() if src is x else src._value
        self._dtype = src._dtype
        self._storage, self._source, self._cache, self._snapshot = _Storage(), None, {}, None

    @classmethod
    def _wrap(cls, value, d, storage=None, source=None):
        """A SplitArray over float32 ``value`` (no copy); views pass their base's ``storage``."""
        new = cls.__new__(cls)
        new._value, new._dtype = value, d
        new._storage = _Storage() if storage is None else storage
        new._source = None if source is None else (source[0], source[1], new._storage.version)
        new._cache, new._snapshot = {}, None
        return new

    # -- attributes ------------------------------------------------------------------------------
    shape = property(lambda self: self._value.shape, doc="Tuple of array dimensions.")
    ndim = property(lambda self: self._value.ndim, doc="Number of dimensions.")
    size = property(lambda self: self._value.size, doc="Number of elements.")
    dtype = property(lambda self: self._dtype, doc="The scheme, a SplitDType (storage float32).")
    itemsize = property(lambda self: self._value.itemsize, doc="Bytes per element of the storage (4).")
    nbytes = property(lambda self: self._value.nbytes, doc="Bytes of the stored value (not the parts).")
    strides = property(lambda self: self._value.strides, doc="Strides of the stored value, in bytes.")
    device = property(lambda self: device_name(self._value),
                      doc="'cpu' (numpy storage) or 'gpu' (cupy storage).")
    T = property(lambda self: self.transpose(), doc="The array with its axes reversed (a view).")
    real = property(lambda self: self._view(lambda v: v), doc="The array itself (a view): real data.")
    imag = property(lambda self: SplitArray._wrap(namespace(self._value).zeros_like(self._value), self._dtype),
                    doc="Zeros of the array's shape (a new array): real data.")

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
        largest magnitude into ``[2**s, 2**(s+1))``, ``s = dtype.scale_exponent(1)``. Read-only
        views of the cache on cpu, copies on gpu (cupy arrays cannot be read-only)."""
        terms = self._parts(self._dtype, None).terms
        return tuple(t.copy() if is_cupy(t) else read_only(t) for t in terms)

    # -- the split cache -------------------------------------------------------------------------
    def _cached(self, key, make, transposed=None):
        """``make()``, kept under ``key`` until the array (or one sharing its storage) is written:
        the parts of a scheme here, the device operands of the GPU engines (``splitprec.engines.cuda.split``).
        ``transposed``: the key of the same value in an array whose 2-D transpose this one is (as
        the GPU engines' parts of one side of a product are the other side's parts of the
        transpose); a ``T`` view keeps it there, shared with its base."""
        if transposed is not None and self._source is not None and _transposes(self._value, self._source[0]._value):
            return self._source[0]._cached(transposed, make)
        self._detect_write()
        version = self._storage.version
        hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        if self._storage.exported and (self._snapshot is None or self._snapshot[0] != version):
            self._snapshot = (version, self._value.copy())
        value = make()
        self._cache[key] = (version, value)
        return value

    def _detect_write(self):
        """A write through an export (the value differs from its snapshot) counts as a write."""
        if self._storage.exported and self._snapshot is not None and \
                self._snapshot[0] == self._storage.version and not _same_bits(self._value, self._snapshot[1]):
            self._written()

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

    def _export(self):
        """Mark the storage exported (a writable alias may exist); drops every cached split."""
        if not self._storage.exported:
            self._storage.exported = True
            self._written()

    # -- conversion and interchange --------------------------------------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """A copy in another scheme (a SplitArray; ``copy=False`` gives the array itself when it
        has that scheme) or, for a numpy dtype, a new numpy/cupy array of that dtype, with
        ``ndarray.astype``'s ``order``, ``casting`` and ``subok``."""
        if isinstance(dtype, SplitDType) or (isinstance(dtype, str) and is_scheme_name(dtype)):
            d = scheme(dtype, "astype")
            return self if not copy and d == self._dtype else SplitArray._wrap(self._value.copy(order), d)
        try:
            target = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"astype: unknown dtype {dtype!r}; expected a split scheme (one of "
                            f"{', '.join(map(repr, scheme_names()))}) or a numpy dtype") from None
        return self._value.astype(target, order=order, casting=casting, subok=subok)

    def copy(self):
        """A copy with its own storage; the cached parts come along (they are still valid)."""
        self._detect_write()
        new = SplitArray._wrap(self._value.copy(), self._dtype)
        version = self._storage.version
        new._cache = {k: (0, p) for k, (v, p) in self._cache.items() if v == version}
        return new

    def to_numpy(self):
        """The value as a new numpy float32 array (a device-to-host copy on gpu)."""
        return self._value.get() if is_cupy(self._value) else self._value.copy()

    get = to_numpy

    def to_device(self, device, /, *, stream=None):
        """The array on ``device`` ('cpu' or 'gpu'): itself if it is there, else a copy."""
        if stream is not None:
            raise ValueError(f"to_device: stream={stream!r} is not supported; expected None")
        return asarray(self, device=device)

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
        return read_only(self._value)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        options = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                     ("dl_device", dl_device), ("copy", copy)) if v is not None}
        if copy:
            return self._value.__dlpack__(**options)
        self._export()
        flagged = max_version is not None and tuple(max_version) >= (1, 0)
        source = self._value if is_cupy(self._value) or not flagged else read_only(self._value)
        return source.__dlpack__(**options)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        if not is_cupy(self._value):
            raise AttributeError("__cuda_array_interface__: the SplitArray lives on the cpu; only "
                                 "gpu (cupy) storage exports it")
        self._export()
        interface = dict(self._value.__cuda_array_interface__)
        interface["data"] = (interface["data"][0], True)       # read-only: a hint consumers may ignore
        return interface

    def __array_namespace__(self, /, *, api_version=None):
        if api_version not in (None, *API_VERSIONS):
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not supported; "
                             f"expected None or one of {', '.join(map(repr, API_VERSIONS))}")
        if "namespace" not in PROTOCOLS:
            raise RuntimeError("__array_namespace__: splitprec.array_api needs numpy >= 2.1; found "
                               f"numpy {np.__version__}")
        return PROTOCOLS["namespace"]

    # -- python protocol -------------------------------------------------------------------------
    def __format__(self, spec):
        """As ``ndarray.__format__``: a 0-d array formats its value, others take only ``""``."""
        return format(self.to_numpy(), spec)

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

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        raise TypeError("only integer scalar arrays can be converted to a scalar index; a "
                        "SplitArray holds float32 values")

    def __contains__(self, value):
        return bool((self == value).any())

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        """The value, the scheme and the current host (numpy) parts, so that a copy (a chunk sent
        to another worker) needs no split; device operands and views' links are not kept. Host
        arrays go as :func:`read_only` views: pickle protocol 5 hands their memory to its
        ``buffer_callback`` as it is, and a writable buffer would write the storage unseen."""
        self._detect_write()
        if not isinstance(self._value, np.ndarray):
            return _rebuild, (self._value, self._dtype.name, {})
        parts = {key: Parts(tuple(map(read_only, kept.terms)),
                            None if kept.exponent is None else read_only(kept.exponent))
                 for key, (version, kept) in self._cache.items()
                 if version == self._storage.version and isinstance(kept, Parts)}
        return _rebuild, (read_only(self._value), self._dtype.name, parts)

    def item(self, *args):
        """The element at ``args`` (all of a size-1 array) as a Python float."""
        return self._value.item(*args)

    def tolist(self):
        """The values as nested Python lists of floats."""
        return self._value.tolist()

    def tobytes(self, order="C"):
        """The float32 storage's raw bytes (``ndarray.tobytes``; a device-to-host copy on gpu)."""
        return self.to_numpy().tobytes(order)

    def fill(self, value):
        """Set every element to the scalar ``value`` (which float32 must hold exactly)."""
        if np.ndim(value):
            raise ValueError(f"fill: value has shape {np.shape(value)}; expected a scalar (setting an "
                             "array element with a sequence, as ndarray.fill refuses)")
        self[...] = value

    # -- indexing --------------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _index(key, "__getitem__")
        return finish(self._view(lambda v: v[key]))

    def __setitem__(self, key, value):
        key = _index(key, "__setitem__")
        data = value._value if isinstance(value, SplitArray) else as_float32(value, "__setitem__", "value")
        placed = isinstance(value, (SplitArray, np.ndarray)) or is_cupy(value)
        self._value[key] = on_device(data, self.device, "__setitem__", "value", placed=placed)
        self._written()

    def _view(self, fn):
        """``fn`` (a shape or index operation) applied to the value; shares storage and parts."""
        return SplitArray._wrap(fn(self._value), self._dtype, self._storage, (self, fn))

    # -- shape methods ---------------------------------------------------------------------------
    def reshape(self, *shape, order="C", copy=None):
        """The array in a new shape (numpy's ``reshape``; ``copy`` as in ``np.reshape``)."""
        shape = shape[0] if len(shape) == 1 else shape
        if copy is not None:
            return np.reshape(self, shape, order=order, copy=copy)
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

    def ravel(self, order="C"):
        """The array flattened to one dimension (a view where numpy's ``ravel`` gives one)."""
        return self._view(lambda v: v.ravel(order))

    def flatten(self, order="C"):
        """A flattened copy."""
        return SplitArray._wrap(self._value.flatten(order), self._dtype)

    # -- numpy's methods (accuracy: splitprec.array.functions, .contractions, docs/arrays.md) ----
    sum = _method(np.sum, "Compensated pairwise sum (``np.sum``).")
    mean = _method(np.mean, "Mean from the compensated sum (``np.mean``).")
    max = _method(np.max, "Largest element (``np.max``).")
    min = _method(np.min, "Smallest element (``np.min``).")
    argmax = _method(np.argmax, "Index of the largest element (``np.argmax``).")
    argmin = _method(np.argmin, "Index of the smallest element (``np.argmin``).")
    std = _method(np.std, "Standard deviation in float32 (``np.std``).")
    var = _method(np.var, "Variance in float32 (``np.var``).")
    prod = _method(np.prod, "Product of the elements in float32 (``np.prod``).")
    cumsum = _method(np.cumsum, "Cumulative sum in float32 (``np.cumsum``).")
    any = _method(np.any, "Whether any element is nonzero (``np.any``).")
    all = _method(np.all, "Whether every element is nonzero (``np.all``).")
    round = _method(np.round, "Values rounded to ``decimals`` in float32 (``np.round``).")
    conj = conjugate = _method(np.conjugate, "The complex conjugate: a copy, for real data.")
    dot = _method(np.dot, "The dot product in the scheme (``np.dot``).")
    cumprod = _method(np.cumprod, "Cumulative product in float32 (``np.cumprod``).")
    argsort = _method(np.argsort, "Indices that sort the array (``np.argsort``).")
    nonzero = _method(np.nonzero, "Indices of the nonzero elements (``np.nonzero``).")
    searchsorted = _method(np.searchsorted, "Insertion indices into this sorted 1-D array (``np.searchsorted``).")
    take = _method(np.take, "Elements at the given indices (``np.take``).")
    repeat = _method(np.repeat, "Each element repeated (``np.repeat``).")
    diagonal = _method(np.diagonal, "The given diagonal, a view (``np.diagonal``).")
    trace = _method(np.trace, "Sum along a diagonal in float32 (``np.trace``).")

    def clip(self, min=None, max=None, out=None, **kwargs):
        """Values limited to [min, max] (``np.clip``); as ``ndarray.clip``, either bound may be
        left out (``a.clip(0)``), while ``np.clip`` needs both."""
        return np.clip(self, min, max, out=out, **kwargs)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort in place along ``axis``, as ``ndarray.sort`` (a write: the cached parts are dropped)."""
        if axis is None:
            raise TypeError("sort: axis=None would flatten, which an in-place sort cannot; expected an "
                            "integer axis (np.sort(a, axis=None) returns the flattened sort)")
        self[...] = np.sort(self, axis=axis, kind=kind, order=order, stable=stable)

    # -- numpy protocols -------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        return PROTOCOLS["ufunc"](ufunc, method, inputs, out, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if not all(issubclass(t, SplitArray) or t.__name__ == "ndarray" for t in types):
            return NotImplemented
        handler = HANDLED.get(func)
        return PROTOCOLS["function"](func, args, kwargs) if handler is None else handler(*args, **kwargs)

    @staticmethod
    def __splitprec_matmul__(a, b, /, out=None, *, dtype=None, precision=None, axes=None):
        """``splitprec.matmul`` with a SplitArray operand (called by ``splitprec.linalg``)."""
        return PROTOCOLS["matmul"](a, b, out=out, dtype=dtype, precision=precision, op="matmul", axes=axes)


_ARRAY_PROTOCOLS = ("__dlpack__", "__cuda_array_interface__", "__array__", "__array_interface__", "__array_ufunc__")
_DEFERRING = [name for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
                              "lshift", "rshift", "and", "xor", "or")
              for name in (f"__{op}__", f"__r{op}__", f"__i{op}__") if hasattr(NDArrayOperatorsMixin, name)]
_DEFERRING += ["__lt__", "__le__", "__gt__", "__ge__"]


def unknown(x):
    """True for an operand that the input rule (``as_float32``) does not read and no array protocol
    describes: an operator then returns NotImplemented, so that its reflected method runs."""
    known = isinstance(x, (SplitArray, np.ndarray, np.generic, numbers.Number, list, tuple)) or is_cupy(x) or is_dask(x)
    return not known and not any(hasattr(x, name) for name in _ARRAY_PROTOCOLS)


def _deferring(method):
    """The mixin's operator ``method``, returning NotImplemented for :func:`unknown` operands."""
    @functools.wraps(method)
    def operator(self, other):
        return NotImplemented if unknown(other) else method(self, other)
    return operator


def _deferring_equality(method):
    """The mixin's ``==`` or ``!=`` ``method``, deferring to :func:`unknown` operands as
    :func:`_deferring` does: their own method answers (Python's reflected call, made here), and where
    it too gives NotImplemented the result is numpy's elementwise unequal, not Python's identity
    fallback (one bool)."""
    @functools.wraps(method)
    def operator(self, other):
        if unknown(other):
            answer = getattr(type(other), method.__name__)(other, self)
            if answer is not NotImplemented:
                return answer
        return method(self, other)
    return operator


for _name in _DEFERRING:
    setattr(SplitArray, _name, _deferring(getattr(NDArrayOperatorsMixin, _name)))
for _name in ("__eq__", "__ne__"):
    setattr(SplitArray, _name, _deferring_equality(getattr(NDArrayOperatorsMixin, _name)))


def _transposes(view, base):
    """True when cupy ``view`` is 2-D ``base`` with its two axes swapped (the same data)."""
    return (view.ndim == base.ndim == 2 and view.shape == base.shape[::-1]
            and view.strides == base.strides[::-1] and view.data.ptr == base.data.ptr)


def _same_bits(value, snapshot):
    """True when float32 ``value`` has the bits of ``snapshot`` (NaN payloads and zero signs too)."""
    return bool(namespace(value).array_equal(value.view(np.uint32), snapshot.view(np.uint32)))


# -- helpers shared by the modules of splitprec.array -------------------------------------------------

def promote(*schemes):
    """The scheme of a result from operands of ``schemes`` (table in docs/arrays.md)."""
    return min(schemes, key=lambda d: (d.product_error, -d.exact_span(), d.cost, d.name))


def result_scheme(operands, out=()):
    """The promoted scheme of the SplitArrays among ``operands``, or, where there is none (numpy
    operands written into a SplitArray ``out``, as ``np.matmul(a, b, out=s)``), ``out``'s."""
    schemes = [x._dtype for x in operands if isinstance(x, SplitArray)] or \
        [x._dtype for x in out if isinstance(x, SplitArray)]
    return promote(*schemes)


def data(x, op, name):
    """``x`` as a float32 numpy/cupy array: a SplitArray's value, or ``as_float32``'s rule."""
    return x._value if isinstance(x, SplitArray) else as_float32(x, op, name)


def _index(key, op):
    """``key`` for the value, or numpy's IndexError for SplitArray indices (float data)."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, SplitArray) for k in parts):
        raise IndexError(f"{op}: a SplitArray is not a valid index; expected integers, slices, "
                         "None, Ellipsis, or integer/bool arrays (numpy's rule for float arrays)")
    return key


def finish(x):
    """A SplitArray result, or its scalar when it has ndim 0 (docs/arrays.md)."""
    if not isinstance(x, SplitArray) or x.ndim:
        return x
    return x._value if is_cupy(x._value) else x._value[()]


def write_out(out, value, d, op, where=True):
    """Store ``value`` (scheme ``d``) into the SplitArray ``out`` of an in-place operation, where
    ``where`` holds; a result that is not float32 is refused (it would round or change kind)."""
    if not isinstance(out, SplitArray):
        raise TypeError(f"{op}: out must be a SplitArray, got {type(out).__name__}")
    if getattr(value, "dtype", None) != np.float32:
        raise TypeError(f"{op}: the result has dtype {getattr(value, 'dtype', type(value).__name__)}"
                        "; out is a SplitArray, which holds float32 results only (expected out=None)")
    if out._dtype != d:
        raise TypeError(f"{op}: the result has scheme {d.name} but out has scheme "
                        f"{out._dtype.name}; an in-place operation keeps its target's scheme "
                        f"(expected operands that promote to {out._dtype.name})")
    if value.shape != out.shape:
        raise ValueError(f"{op}: out has shape {out.shape} but the result has shape "
                         f"{value.shape}; expected equal shapes")
    writable(out._value, op)
    xp = same_device(op, out._value, value)
    if where is True:
        out._value[...] = value
    else:
        xp.copyto(out._value, value, where=where)
    out._written()
    return out


def asarray(x, dtype=None, *, device=None):
    """A SplitArray of scheme ``dtype`` holding ``x``.

    Parameters
    ----------
    x : SplitArray, numpy/cupy array, Python scalar or nested list
        The data; what is accepted without rounding is stated in docs/arrays.md.
    dtype : str or SplitDType, optional
        Scheme name, e.g. ``"bf16x9"``. Default: ``x``'s scheme for a SplitArray, otherwise the
        float32 default of :func:`splitprec.default_scheme` (unless set, the cheapest fp32-class
        scheme, ``bf16x6``).
    device : {"cpu", "gpu"}, optional
        Storage: numpy (cpu) or cupy (gpu). Default: where ``x`` is (lists and scalars: cpu).

    Returns
    -------
    SplitArray
        ``x`` itself when it is a SplitArray of that scheme and device; otherwise a new array
        that owns a copy of the data. A dask array ``x`` gives a dask array of SplitArray chunks.

    Raises
    ------
    TypeError
        float64 arrays, values float32 cannot hold exactly, complex or non-numeric data.
    ValueError
        Unknown scheme or device.

    Accuracy: exact (no value is rounded), checked by
    ``tests/test_array.py::test_asarray_rejects_values_float32_cannot_hold``.
    """
    if is_dask(x):
        return dask_layer().asarray(x, dtype, device=device)
    d = x._dtype if isinstance(x, SplitArray) and dtype is None else scheme(dtype, "asarray")
    if isinstance(x, SplitArray) and d == x._dtype and device in (None, x.device):
        return x
    value = data(x, "asarray", "x")
    moved = move(value, device, "asarray")
    return SplitArray._wrap(moved.copy() if moved is value else moved, d)

