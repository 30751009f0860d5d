"""TrackedArray: float32 (or complex64) values of a scheme with a rigorous per-entry error bound.

A TrackedArray holds the computed value ``v`` (numpy or cupy storage, as a SplitArray's), its
scheme, and ``error_bound``, a float64 array ``E`` of the same shape and device with ``|v - x| <= E``
entry by entry, where ``x`` is the exact real result of the same expression on the same inputs.
It is immutable, so the bound can never go stale. Operations return TrackedArrays whose bound
covers the operands' bounds, propagated, and the operation's own rounding or scheme error
(docs/tracking.md derives each rule); ``inf`` marks an entry whose error cannot be stated
(overflow, NaN, a divisor or logarithm argument whose interval reaches 0). With
``track_error="probabilistic"`` the products, FFTs and sums use the probabilistic bounds of
docs/bounds.md section 13, which hold per entry and step with probability ``confidence``.

The handlers live in :mod:`splitprec.tracking.elementwise` (ufuncs, ``where``),
:mod:`~splitprec.tracking.reductions` (``sum``, ``mean``), :mod:`~splitprec.tracking.contractions`
(``@``, ``matmul``, ``einsum``), :mod:`~splitprec.tracking.transforms` (``splitprec.fft``) and
:mod:`~splitprec.tracking.shapes`; any other numpy function raises TypeError (run it on
``x.untracked`` to drop the bound explicitly).
"""
import decimal
import numbers

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .._backend import device_name, is_cupy, namespace
from ..array.core import SplitArray, promote
from .rounding import readable

UFUNCS = {}          # numpy ufunc -> handler(*inputs), filled by the handler modules
FUNCTIONS = {}       # numpy function -> handler(*args, **kwargs)
DEFAULT_CONFIDENCE = 0.999


class TrackedArray(NDArrayOperatorsMixin):
    """An array of a split scheme that carries a bound on its error; made by
    ``splitprec.asarray(x, track_error=True)`` (module docstring)."""

    __slots__ = ("_value", "_bound", "_dtype", "_confidence", "_cache")

    @classmethod
    def _wrap(cls, value, bound, d, confidence):
        """A TrackedArray over ``value`` and float64 ``bound`` (same shape, no copies);
        ``confidence`` None for a rigorous bound."""
        new = cls.__new__(cls)
        value = np.asarray(value) if isinstance(value, np.generic) else value       # numpy's 0-d results
        bound = np.asarray(bound, dtype=np.float64) if isinstance(bound, (np.generic, float)) else bound
        new._value, new._dtype, new._confidence, new._cache = value, d, confidence, {}
        new._bound = bound if bound.shape == value.shape else namespace(value).broadcast_to(bound, value.shape)
        return new

    shape = property(lambda self: self._value.shape, doc="Tuple of array dimensions.")
    ndim = property(lambda self: self._value.ndim, doc="Number of dimensions.")
    size = property(lambda self: self._value.size, doc="Number of elements.")
    dtype = property(lambda self: self._dtype, doc="The scheme, a SplitDType.")
    device = property(lambda self: device_name(self._value), doc="'cpu' (numpy) or 'gpu' (cupy).")
    is_complex = property(lambda self: self._value.dtype == np.complex64,
                          doc="True for complex64 values (the results of FFTs).")
    mode = property(lambda self: "rigorous" if self._confidence is None else "probabilistic",
                    doc="'rigorous' or 'probabilistic' (then see ``confidence``).")
    confidence = property(lambda self: self._confidence,
                          doc="Per-entry, per-step probability of a probabilistic bound; None if rigorous.")
    T = property(lambda self: self.transpose(), doc="The array with its axes reversed.")
    real = property(lambda self: np.real(self), doc="The real parts, each within the entry's bound.")
    imag = property(lambda self: np.imag(self), doc="The imaginary parts, each within the entry's bound.")

    @property
    def error_bound(self):
        """Absolute bound on ``|value - exact|`` per entry: a new float64 array on the device (inf
        where the error cannot be stated)."""
        return readable(self._bound, namespace(self._value))

    @property
    def relative_error_bound(self):
        """``error_bound / |value|`` per entry (float64): 0 where both are 0, inf where only the
        value is 0 (or the bound is inf)."""
        xp = namespace(self._value)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            bound = readable(self._bound, xp)
            ratio = xp.nextafter(bound / xp.abs(self._value).astype(np.float64), np.inf)   # the division rounded up
        return xp.where(bound == 0, 0.0, xp.where(xp.isnan(ratio), np.inf, ratio))

    @property
    def value(self):
        """The computed values: a new float32 (complex64) numpy or cupy array."""
        return self._value.copy()

    @property
    def untracked(self):
        """The values as a SplitArray of the scheme (float32 values only), without the bound."""
        if self.is_complex:
            raise TypeError("untracked: the values are complex64 and a SplitArray holds float32; "
                            "expected a real TrackedArray (take .value for the complex values)")
        return self._split()

    def _split(self):
        """The value as a SplitArray sharing it, made once: products reuse its cached parts."""
        if "split" not in self._cache:
            self._cache["split"] = SplitArray._wrap(self._value, self._dtype)
        return self._cache["split"]

    def certify(self, rtol=0.0, atol=0.0):
        """True if every entry's exact value ``x`` satisfies ``|value - x| <= atol + rtol * |x|``;
        otherwise a ValueError naming the worst entry, its value, its bound and the tolerance.

        A finite bound ``E`` certifies an entry when ``E <= atol``, or when ``E < |value|`` and ``E *
        (1 + rtol) <= atol + rtol * |value|`` (with a ``2**-50`` margin for the float64 arithmetic),
        since ``|x| >= |value| - E``; an infinite bound never does. ``rtol`` and ``atol`` are
        non-negative numbers (inf allowed).
        """
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not tol >= 0:
                raise ValueError(f"certify: {name} must be a non-negative number, got {tol!r}")
        xp = namespace(self._value)
        bound = readable(self._bound, xp)
        with np.errstate(over="ignore", invalid="ignore"):
            magnitude = xp.abs(self._value).astype(np.float64)
            # no rtol * |value| where either is 0: rtol = inf on a zero, rtol = 0 on an infinite value
            allowed = atol + xp.where((magnitude > 0) & (rtol > 0), rtol * magnitude, 0.0)
            # each side off by its roundings, relative and (in the subnormal range) absolute
            needed = bound * (1 + rtol) * (1 + 2.0 ** -50) + 2.0 ** -1072
            relative = (bound < magnitude) & (needed <= allowed * (1 - 2.0 ** -50) - 2.0 ** -1072)
            failing = ~((bound < np.inf) & ((bound <= atol) | relative))
        if not bool(failing.any()):
            return True
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = xp.where(failing, needed / allowed, 0.0)
        worst = np.unravel_index(int(xp.argmax(xp.where(xp.isnan(ratio), np.inf, ratio))), self.shape)
        raise ValueError(f"certify: entry {tuple(int(i) for i in worst)} = {self._value[worst].item()!r} has "
                         f"error bound {float(bound[worst])!r}, above the tolerance "
                         f"{float(allowed[worst])!r} (atol={atol!r}, rtol={rtol!r}); expected every "
                         "entry within atol + rtol * |exact value|")

    def __repr__(self):
        host = self._value.get() if is_cupy(self._value) else self._value
        body = np.array2string(host, separator=", ", prefix="TrackedArray(", threshold=20)
        worst = float(self.relative_error_bound.max()) if self.size else 0.0
        mode = "" if self._confidence is None else f", probabilistic {self._confidence!r}"
        return (f"TrackedArray({body}, dtype={self._dtype.name}, device={self.device}, "
                f"relative error <= {_upward(worst)}{mode})")

    def __len__(self):
        return len(self._value)

    def __bool__(self):
        raise TypeError("TrackedArray.__bool__: the truth of a value with an error bound is not "
                        "certified; expected an explicit comparison of x.value")

    def __setitem__(self, key, value):
        raise TypeError("TrackedArray.__setitem__: tracked arrays are immutable (a write would "
                        "leave the bound stale); expected a new array, e.g. np.where(mask, x, y)")

    def __getitem__(self, key):
        from .shapes import index
        return index(self, key)

    def reshape(self, *shape, order="C"):
        """The array in a new shape, bounds alike."""
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes):
        """The array with permuted axes, bounds alike."""
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def conj(self):
        """The complex conjugate (exact), bounds alike."""
        return np.conjugate(self)

    def sum(self, axis=None, dtype=None, keepdims=False):
        """Compensated sum (:mod:`splitprec.tracking.reductions`)."""
        return np.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False):
        """Mean from the compensated sum (:mod:`splitprec.tracking.reductions`)."""
        return np.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def astype(self, dtype, copy=True):
        """The array itself for float32 (or its scheme); other dtypes would drop the bound: TypeError."""
        if np.dtype(dtype) != np.float32 or self.is_complex:
            raise TypeError(f"astype: a TrackedArray of {self._value.dtype} values keeps its dtype; got "
                            f"{dtype!r} (take x.value.astype(...) to leave tracking explicitly)")
        return self

    def squeeze(self, axis=None):
        """The array without (the given) length-one axes, bounds alike."""
        return np.squeeze(self, axis=axis)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("TrackedArray.__array__: converting to a numpy array would drop the error "
                        "bound silently; expected x.value (the values) or x.error_bound")

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        op = ufunc.__name__
        dtype = kwargs.pop("dtype", None)
        if dtype is not None and np.dtype(dtype) != np.float32:    # float32 or the scheme (dask): the default
            kwargs["dtype"] = dtype
        if method != "__call__" or out is not None or kwargs:
            raise TypeError(f"{op}: tracked arrays take plain calls only (no ufunc methods, out= "
                            f"or options; got method {method!r}, options {sorted(kwargs) + (['out'] if out else [])})")
        handler = UFUNCS.get(ufunc)
        if handler is None:
            raise TypeError(f"{op}: no error-propagation rule for this ufunc; expected one of "
                            f"{', '.join(sorted(u.__name__ for u in UFUNCS))} (or x.untracked to drop the bound)")
        return handler(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        handler = FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(f"{func.__name__}: no error-propagation rule for this function on "
                            f"tracked arrays; expected one of {', '.join(sorted(f.__name__ for f in FUNCTIONS))}"
                            " (or x.untracked to drop the bound)")
        return handler(*args, **kwargs)

    @staticmethod
    def __splitprec_matmul__(a, b, /, out=None, *, dtype=None, precision=None, axes=None):
        """``splitprec.matmul`` with a tracked operand (called by ``splitprec.linalg``); ``axes``
        must be None (move the axes of tracked operands first, e.g. with ``np.moveaxis``)."""
        if axes is not None:
            raise TypeError(f"matmul: axes={axes!r} is not supported for tracked arrays; expected axes=None "
                            "(move the axes first, e.g. with numpy.moveaxis)")
        from .contractions import matmul
        return matmul(a, b, out=out, dtype=dtype, precision=precision)

    @staticmethod
    def __splitprec_fft__(a, n, axis, *, norm, out, dtype, inverse, kind, op, hermitian):
        """A ``splitprec.fft`` 1-D transform of a tracked array (called by ``splitprec.fft``)."""
        from .transforms import transform
        return transform(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=inverse, kind=kind,
                         op=op, hermitian=hermitian)


def implements(*functions):
    """Register the decorated handler for each numpy function given."""
    def register(handler):
        for function in functions:
            FUNCTIONS[function] = handler
        return handler
    return register


def context(arrays, op):
    """``(xp, scheme, confidence)`` of a result of tracked ``arrays`` (at least one): the device
    they share, their promoted scheme, the smallest confidence (None if all are rigorous)."""
    from ..array.convert import same_device
    xp = same_device(op, *[a._value for a in arrays])
    confidences = [a._confidence for a in arrays if a._confidence is not None]
    schemes = {a._dtype for a in arrays}
    d = schemes.pop() if len(schemes) == 1 else promote(*schemes)
    return xp, d, min(confidences) if confidences else None


def _upward(x):
    """``x`` to three significant digits, rounded up (a printed bound is never below the bound)."""
    if not np.isfinite(x) or x == 0:
        return f"{x:.3g}"
    return f"{float(decimal.Context(prec=3, rounding=decimal.ROUND_CEILING).plus(decimal.Decimal(x))):.3g}"
