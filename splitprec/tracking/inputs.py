"""Data into tracked arrays: ``asarray(..., track_error=...)`` and the operands of tracked operations.

A tracked input keeps what it was given as the exact value: float32, float16 and complex64 data
(and integers float32 holds) enter with bound 0; float64, complex128 and Python floats are rounded
to nearest float32 (complex64) and enter with the exact rounding error ``|x - fl32(x)|`` as their
bound (the difference of a double and its nearest float is itself a double; a complex error's
modulus is rounded up; long doubles round once, directly, and their error is rounded up to
float64), so nothing is rounded without the bound saying so. Integers beyond 2**53 are refused.
NaN and infinite data enter with an unknown (NaN) bound. ``error=`` adds a bound the caller knows
for the given data (the sum rounded up).
"""
import functools
import math
import numbers

import numpy as np

from .._backend import device_name, is_cupy, is_dask, namespace
from ..array.convert import move, scheme, same_device
from ..array.core import SplitArray, asarray as split_asarray
from .core import DEFAULT_CONFIDENCE, TrackedArray
from .rounding import rounded_up

TRACK_MODES = (False, True, "rigorous", "probabilistic")
_EXACT_INTEGERS = 2 ** 53          # integers up to this convert to float64 exactly
_ZERO = np.zeros((), np.float64)   # the bound of an exact scalar (read-only use)
_HYPOT_UP = 1 + 2.0 ** -50         # covers a modulus rounded within an ulp, and this product's rounding


def _host_or_device(x, op, name):
    """``x`` as a numpy or cupy array (Python data: numpy), or a TypeError naming it."""
    if isinstance(x, SplitArray):
        return x._value
    if is_cupy(x) or isinstance(x, (np.ndarray, np.generic)):
        return x
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > _EXACT_INTEGERS:
        raise TypeError(f"{op}: {name} is the integer {x!r}, beyond 2**53, which float64 cannot hold "
                        "exactly; expected integers of at most 2**53 in magnitude (or float data)")
    if isinstance(x, (numbers.Number, list, tuple)):
        return np.asarray(x)
    raise TypeError(f"{op}: {name} of type {type(x).__name__} is not accepted; expected a numpy/cupy "
                    "array, a SplitArray, a TrackedArray, a Python number or a (nested) list")


def rounded(x, op, name):
    """``(value, bound)``: float32 (complex64) ``value`` of data ``x`` and the float64 bound of its
    rounding (0 where exact; module docstring)."""
    x = _host_or_device(x, op, name)
    xp = namespace(x)
    kind = x.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; expected real or complex numbers")
    target = np.complex64 if kind == "c" else np.float32
    if x.dtype in (np.float32, np.float16, np.complex64):
        value = x.astype(target, copy=False)
        finite = xp.isfinite(value)
        return value, xp.zeros((), np.float64) if bool(finite.all()) else xp.where(finite, 0.0, np.nan)
    if kind in "iu" and x.size and max(int(x.max()), -int(x.min())) > _EXACT_INTEGERS:    # exact: no float64 cast
        raise TypeError(f"{op}: {name} holds integers beyond 2**53, which float64 cannot hold "
                        "exactly; expected integers of at most 2**53 in magnitude (or float data)")
    wide = x.astype(np.result_type(x.dtype, np.complex128 if kind == "c" else np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        value = wide.astype(target)
        bound = xp.abs(wide - value.astype(wide.dtype))
    if bound.dtype != np.float64:              # long double: its exact error, rounded up to float64
        narrow = bound.astype(np.float64)
        bound = xp.where(narrow < bound, np.nextafter(narrow, np.inf), narrow)
    if kind == "c":                            # the modulus (hypot) is rounded, to within an ulp: up
        bound = bound * _HYPOT_UP
    return value, bound                        # NaN for NaN or infinite data: unknown


def operand(x, op, name, like):
    """A tracked operand from ``x``: itself, or data on the device of the TrackedArray ``like``
    (arrays must already be there; Python data moves), with the bound of its rounding."""
    if isinstance(x, TrackedArray):
        return x
    if type(x) is float and math.isfinite(x) and float(np.float32(x)) == x and device_name(like._value) == "cpu":
        return TrackedArray._wrap(np.array(x, np.float32), _ZERO, like._dtype, None)
    value, bound = rounded(x, op, name)
    if isinstance(x, (np.ndarray, SplitArray)) or is_cupy(x):
        same_device(op, value, like._value)
    elif device_name(like._value) == "gpu":
        value, bound = move(value, "gpu", op), move(bound, "gpu", op)
    return TrackedArray._wrap(value, bound, like._dtype, None)


def _user_error(error, shape, xp, op):
    """The caller's ``error=``: non-negative real numbers (inf allowed) broadcastable to ``shape``,
    as float64 rounded up where the conversion may have rounded (long doubles, Fractions, integers
    beyond 2**53: one float64 step up covers it)."""
    given = error if hasattr(error, "dtype") else np.asarray(error)
    if given.dtype.kind == "c":
        raise TypeError(f"{op}: error must hold real numbers; got {error!r}")
    bound = xp.asarray(given, dtype=np.float64)
    if bool(xp.isnan(bound).any()) or bool((bound < 0).any()):     # inf: unknown, allowed
        raise ValueError(f"{op}: error must hold non-negative numbers (inf allowed); got {error!r}")
    if not (given.dtype in (np.float64, np.float32, np.float16, np.bool_) or
            (given.dtype.kind in "iu" and bool((abs(given) <= 2 ** 53).all()))):
        bound = xp.where((bound > 0) & (bound < np.inf), xp.nextafter(bound, np.inf), bound)
    try:
        return xp.broadcast_to(bound, shape)
    except ValueError:
        raise ValueError(f"{op}: error has shape {bound.shape}, which does not broadcast to the data's "
                         f"shape {shape}") from None


def _with_user_error(bound, error, xp):
    """``bound + error`` rounded up where both are nonzero (a float64 sum may round down;
    adding 0 is exact, so an exact input keeps the caller's bound as given)."""
    total = bound + error
    return xp.where((bound != 0) & (error != 0), rounded_up(total, xp), total)


def _confidence(track_error, confidence, op):
    if track_error not in TRACK_MODES:
        raise ValueError(f"{op}: unknown track_error {track_error!r}; expected False, True, "
                         "'rigorous' or 'probabilistic'")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"{op}: confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return confidence if track_error == "probabilistic" else None


def _dask_blocks(x, dtype, device, track_error, error, confidence, op):
    """A dask array of TrackedArray chunks (elementwise operations, ``sum``, ``mean`` and dask's
    own ``@`` then run chunk by chunk; docs/tracking.md); ``error`` must be a scalar."""
    from dask.array.utils import meta_from_array
    if error is not None and np.ndim(error) != 0:
        raise TypeError(f"{op}: error= of a dask array must be a scalar bound; got an array of shape "
                        f"{np.shape(error)}")
    options = dict(device=device, track_error=track_error, error=error, confidence=confidence or DEFAULT_CONFIDENCE)
    meta = asarray(meta_from_array(x), dtype, **options)
    return x.map_blocks(functools.partial(asarray, dtype=meta.dtype, **options), meta=meta)


def asarray(x, dtype=None, *, device=None, track_error=False, error=None, confidence=DEFAULT_CONFIDENCE):
    """A SplitArray of scheme ``dtype`` holding ``x``, or with ``track_error`` a TrackedArray.

    Parameters
    ----------
    x : SplitArray, TrackedArray, numpy/cupy array, Python scalar or nested list
        The data. Untracked: nothing is rounded (docs/arrays.md). Tracked: float64 and Python
        floats are rounded to nearest float32 and the rounding error becomes the bound.
    dtype : str or SplitDType, optional
        Scheme name, e.g. ``"bf16x9"``; default ``x``'s scheme, else :func:`splitprec.default_scheme`'s.
    device : {"cpu", "gpu"}, optional
        Storage: numpy (cpu) or cupy (gpu). Default: where ``x`` is (lists and scalars: cpu).
    track_error : {False, True, "rigorous", "probabilistic"}, keyword-only
        False (default): a SplitArray. True or "rigorous": a TrackedArray whose bound holds for
        every input. "probabilistic": the products, FFTs and sums use their probabilistic bounds
        (docs/bounds.md section 13), each holding per entry with probability ``confidence``.
    error : float or array of float, keyword-only
        A bound on ``|x - exact input|`` the caller knows, added to the rounding bound (tracked only).
    confidence : float in (0, 1), keyword-only
        The probability of each probabilistic step (ignored when rigorous); 0.999 as in
        :func:`splitprec.accuracy.gemm_bound`.

    Returns
    -------
    SplitArray, or TrackedArray (``track_error``); see :func:`splitprec.array.asarray` for the
    untracked rules. A dask array ``x`` gives a dask array of SplitArray (TrackedArray) chunks.

    Raises
    ------
    TypeError
        Untracked: data float32 cannot hold exactly. Both: complex data untracked, non-numeric
        data, integers beyond 2**53 (tracked), an array ``error`` with dask input.
    ValueError
        Unknown scheme, device or ``track_error``; ``error`` without tracking, negative or NaN
        ``error``, ``confidence`` outside (0, 1).

    Accuracy: the bound of each operation is derived in docs/tracking.md and checked against exact
    evaluation by ``tests/test_tracking_trees.py``.

    Examples
    --------
    >>> import splitprec as sp
    >>> x = sp.asarray([0.1, 2.0], dtype="bf16x9", track_error=True)
    >>> x.error_bound                                  # 0.1 rounded to float32; 2.0 exact
    array([1.49011611e-09, 0.00000000e+00])
    >>> y = (x * x).sum()
    >>> bool(abs(float(y.value) - 4.01) <= float(y.error_bound))
    True
    """
    op = "asarray"
    confidence = _confidence(track_error, confidence, op)
    if track_error is False:
        if error is not None:
            raise ValueError(f"{op}: error={error!r} needs track_error=True or 'probabilistic'; "
                             "expected error=None for an untracked SplitArray")
        return split_asarray(x, dtype, device=device)
    if is_dask(x):
        return _dask_blocks(x, dtype, device, track_error, error, confidence, op)
    if isinstance(x, TrackedArray):
        d = x._dtype if dtype is None else scheme(dtype, op)
        value, bound = move(x._value, device, op), move(x._bound, device, op)
        confidence = x._confidence if x._confidence is not None else confidence   # never upgraded
    else:
        d = x._dtype if isinstance(x, SplitArray) and dtype is None else scheme(dtype, op)
        value, bound = rounded(x, op, "x")
        value, bound = move(value, device, op), move(bound, device, op)
        value = value.copy() if value is _host_or_device(x, op, "x") else value
    if error is not None:
        bound = _with_user_error(bound, _user_error(error, value.shape, namespace(value), op), namespace(value))
    return TrackedArray._wrap(value, namespace(value).asarray(bound, dtype=np.float64), d, confidence)
