"""The scheme a call runs when it names none: :func:`default_scheme`, per thread and task.

Each target has its own default: float32 data (``matmul``, the ffts, ``asarray``) and float64 data
(``matmul``). A default is a scheme or a precision class (``"fp32"``, ``"fp64"``: for products the
class's fastest scheme on the CPU engine, and on the GPU its fastest path per shape, cuBLAS SGEMM
included; elsewhere the cheapest scheme of the class, ``dtypes.cheapest``); the built-in defaults are the
classes. The defaults live in a :class:`contextvars.ContextVar`, as :mod:`decimal`'s context does:
a change applies to the thread (or asyncio task) that makes it, and a new thread starts from the
built-in defaults (``contextvars.copy_context().run`` carries them into one).
"""
from __future__ import annotations

import contextvars

from .dtypes import PRECISIONS, SchemeLike, cheapest, check_precision, dtype as get_dtype

_TARGET_OF_PRECISION = {"fp32": "float32", "fp64": "float64"}
_DEFAULTS = contextvars.ContextVar("splitprec_default_scheme",
                                   default={"float32": "fp32", "float64": "fp64"})
_UNSET = object()


class _Restore:
    """The handle :func:`default_scheme` returns: in a ``with`` statement, the defaults from before
    the call come back on exit, also when the block raises. Entered where the defaults are no
    longer the ones the call set (the handle used a second time, or the defaults changed between
    the call and the ``with``), it sets its scheme again and restores the defaults it found."""

    def __init__(self, previous, current, choice, target):
        self._previous, self._current, self._choice, self._target = previous, current, choice, target
        self._restore = []          # per entry, innermost last: the defaults to put back on exit

    def __enter__(self):
        found = _DEFAULTS.get()
        if found is self._current:              # the first entry, right after the call
            self._restore.append(self._previous)
            self._current = None
        else:
            self._restore.append(found)
            _DEFAULTS.set(found | {self._target: self._choice})
        return self._choice

    def __exit__(self, *exc_info):
        _DEFAULTS.set(self._restore.pop())
        return False

    def __repr__(self):
        return f"default_scheme({getattr(self._choice, 'name', self._choice)!r})"


def default_scheme(scheme: SchemeLike | object = _UNSET, /):
    """Set (or, with no argument, read) the scheme that calls naming none run.

    ``sp.default_scheme("bf16x9")`` sets it for float32 data from then on (like
    ``torch.set_float32_matmul_precision``); ``with sp.default_scheme("bf16x9"):`` sets it for the
    block and restores the previous defaults after it, also on an exception. A float64-target
    scheme (``"ozaki2_int8x16"``) or ``"fp64"`` sets the float64 default; ``"fp32"``/``"fp64"``
    return a target to its class pick. It applies where neither ``dtype`` nor ``precision`` is
    given: ``matmul``, the ffts and ``asarray``. A SplitArray keeps its own scheme.

    Parameters
    ----------
    scheme : str, SplitDType or jax.lax.DotAlgorithmPreset, optional
        A scheme name (any spelling :func:`splitprec.dtype` resolves) or ``"fp32"``/``"fp64"``.

    Returns
    -------
    With no argument, the current defaults: ``{"float32": ..., "float64": ...}``, each a scheme
    name or a precision class. With one, a handle to use in a ``with`` statement; entering it
    gives the SplitDType (or the precision) just set.

    Raises
    ------
    ValueError
        An unknown name, or an XLA preset with no splitprec equivalent.
    TypeError
        A value that is neither a name nor a SplitDType.

    Examples
    --------
    >>> import splitprec as sp
    >>> sp.default_scheme()
    {'float32': 'fp32', 'float64': 'fp64'}
    >>> with sp.default_scheme("BF16_BF16_F32_X9") as d:
    ...     d.name, sp.default_scheme()["float32"]
    ('bf16x9', 'bf16x9')
    >>> sp.default_scheme()["float32"]
    'fp32'
    """
    if scheme is _UNSET:
        return {target: getattr(choice, "name", choice) for target, choice in _DEFAULTS.get().items()}
    choice, target = _choice(scheme)
    previous = _DEFAULTS.get()
    current = previous | {target: choice}
    _DEFAULTS.set(current)
    return _Restore(previous, current, choice, target)


def _choice(scheme):
    """``(the default to store, its target)`` for a scheme name, SplitDType or precision class."""
    if isinstance(scheme, str) and scheme.lower() in PRECISIONS:
        return scheme.lower(), _TARGET_OF_PRECISION[scheme.lower()]
    try:
        d = get_dtype(scheme)
    except (TypeError, ValueError) as err:
        raise type(err)(f"default_scheme: {err} (or a precision class, 'fp32' or 'fp64')") from None
    return d, d.target


def current_defaults():
    """The current defaults as a hashable pair ``(float32 default, float64 default)`` (plan keys)."""
    defaults = _DEFAULTS.get()
    return defaults["float32"], defaults["float64"]


def class_of(dtype, precision, *, target):
    """The precision class (``"fp32"``, ``"fp64"``) a call resolves by, or None when it names or
    defaults to a scheme: the GPU picks a class's path per shape."""
    if dtype is not None:
        return None
    choice = _requested(precision, target)
    return choice if isinstance(choice, str) else None


def resolve(dtype, precision, *, target, op, pick=cheapest):
    """The scheme a call runs: ``dtype`` if given, else ``pick`` of the ``precision`` class, else
    the default for data of ``target`` (a precision-class default is picked by ``pick`` too)."""
    if dtype is not None and precision is not None:
        raise ValueError(f"{op}: give dtype or precision, not both (got dtype={dtype!r}, "
                         f"precision={precision!r})")
    if dtype is not None:
        return get_dtype(dtype)
    choice = _requested(precision, target)
    return pick(choice) if isinstance(choice, str) else choice


def _requested(precision, target):
    """The precision class asked for, else the default for data of ``target`` (a scheme or a class)."""
    return _DEFAULTS.get()[target] if precision is None else check_precision(precision)
