"""Data in and out of the public functions: arrays of any library, and the one policy for values.

Members: :func:`read` (operands as numpy/cupy arrays, and how to give a result back in their
library), :func:`target_of` (the target an operand's dtype asks for), :func:`exact` (an operand as
the target dtype, never rounded), :func:`write` (a result into ``out=``), :func:`writable` (the
check, naming ``out``, that it is not read-only), :func:`unmasked` (the refusal of masked arrays).

In
    numpy and cupy arrays are used as they are. An object with ``__dlpack__`` (a torch tensor, a jax
    array, ...) is read without a copy through DLPack: ``numpy.from_dlpack`` when it lives on the
    CPU, ``cupy.from_dlpack`` on a CUDA device (cupy hands its current stream to the producer, so
    the data is read on the current stream). An object with only ``__cuda_array_interface__`` goes
    through ``cupy.asarray`` (no copy; cupy waits on the stream the interface names). Other objects
    with ``__array__`` or ``__array_interface__``, nested lists, tuples and Python scalars go through
    ``numpy.asarray``. ``numpy.ma.MaskedArray`` is refused: its mask would be lost.
Out
    The result goes back through DLPack to the library of the input: ``torch.from_dlpack`` for a
    torch tensor, the ``from_dlpack`` of the input's ``__array_namespace__`` otherwise (jax.numpy
    for a jax array); no copy on either side. numpy, cupy, lists and scalars give numpy or cupy
    arrays; so do SplitArrays and objects of a library with neither. Operands from two different
    libraries (a torch tensor with a jax array) are refused; numpy data mixes with any. An ``out=``
    array must be of the result's kind, of a dtype that holds the result exactly (its own, or
    float64/complex128 for a float32/complex64 result; TypeError otherwise, as numpy's casting
    error, which would also round into float16), of its shape and writable (ValueError otherwise;
    TypeError for an immutable jax array), each error naming ``out``.
Values (the same in ``matmul``, the ffts and ``asarray``)
    float32 and complex64 data are used as they are, in either byte order; float16 and bfloat16
    (``ml_dtypes.bfloat16`` arrays, torch.bfloat16 tensors) widen exactly to float32. Integer and bool
    data, and the Python scalars of lists, tuples and scalars, are taken where the target dtype
    holds every value exactly (integers below 2**53 in magnitude), else refused. float64 and
    complex128 arrays are refused for float32 targets (never rounded silently), and float32 for
    float64 targets (never promoted silently).
"""
from __future__ import annotations

import functools
import numbers
from typing import Any, Callable, NamedTuple

import numpy as np

from ._backend import gpu_module, is_cupy, namespace

__all__ = ["Operand", "exact", "read", "target_of", "unmasked", "writable", "write"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

# Anything read() takes: numpy/cupy arrays, DLPack or __cuda_array_interface__ objects, lists,
# tuples, Python scalars, SplitArrays.
ArrayLike = Any
# A result: a numpy or cupy array, or an array of the operands' library (torch, jax, ...).
Array = Any

_DLPACK_CPU = 1                    # kDLCPU
_DLPACK_CUDA = (2, 13)             # kDLCUDA, kDLCUDAManaged
_IMMUTABLE = ("jax", "jaxlib")    # root modules of array types that cannot be written in place
_ACCEPTED = {"float32": "float32, float16 or bfloat16 data",
             "complex64": "float32, complex64, float16 or bfloat16 data",
             "float64": "float64 data"}


class Operand(NamedTuple):
    """One operand as read: a numpy or cupy array, whether it came from Python data (lists,
    tuples, scalars: weakly typed, as NEP 50 takes Python scalars), and its library (the root
    module of a foreign array's type, or None)."""

    array: Any
    weak: bool
    library: str | None


def read(op, **operands) -> tuple[list[Operand], Callable]:
    """``([Operand, ...], back)`` for the operands given by name (as the caller's parameters are
    called); ``back(result)`` gives a numpy/cupy result in the operands' library."""
    read_ = [_read(x, op, name) for name, x in operands.items()]
    libraries = {(o.library, type(x)) for o, x in zip(read_, operands.values()) if o.library}
    if len({library for library, _ in libraries}) > 1:
        kinds = " and ".join(sorted(f"{t.__module__}.{t.__name__}" for _, t in libraries))
        raise TypeError(f"{op}: operands from different libraries ({kinds}); expected arrays of one "
                        "library, with numpy arrays, lists and scalars beside them")
    return read_, _back(next((x for o, x in zip(read_, operands.values()) if o.library), None))


def target_of(operand: Operand):
    """``"float32"`` or ``"float64"``: the target an operand's floating dtype asks for; None for
    integers, bools and Python data (they take the target of the other operands)."""
    dt = operand.array.dtype
    if operand.weak or dt.kind not in "fcV":
        return None
    if dt.kind == "V":
        return "float32" if dt.name == "bfloat16" else None
    return "float32" if dt.itemsize <= (8 if dt.kind == "c" else 4) else "float64"


def exact(operand: Operand, op, name, *, target, complex_ok=False, accepted="accepted:"):
    """The operand's array as ``target`` (``"float32"``, ``"float64"``; float32 targets with
    ``complex_ok`` keep complex64), by the value policy of the module docstring, or a TypeError
    naming ``name``; ``accepted`` starts the list of what is accepted in the message."""
    x, dt = operand.array, operand.array.dtype
    if dt.kind in "fc" and not dt.isnative:
        x = x.astype(dt.newbyteorder("="))
        dt = x.dtype
    holder = "complex64" if complex_ok and target == "float32" else target
    if target == "float32":
        if dt == np.float32 or (complex_ok and dt == np.complex64):
            return x
        if dt == np.float16:
            return x.astype(np.float32)
        if dt.name == "bfloat16":
            return _widen_bfloat16(x.view(np.uint16))
    elif dt == np.float64:
        return x
    if dt.kind in "biu" or (operand.weak and dt.kind in ("fc" if holder == "complex64" else "f")):
        return exactly(x, np.complex64 if dt.kind == "c" else np.dtype(target), op, name)
    if operand.weak and dt.kind == "O":
        _refuse_python_objects(x, holder, op, name)
    raise TypeError(f"{op}: {name} has dtype {dt}; {accepted} {_ACCEPTED[holder]}, and integers, "
                    f"bools and Python scalars that {holder} holds exactly (convert explicitly, "
                    f"e.g. {name}.astype(numpy.{holder}))")


def _refuse_python_objects(x, holder, op, name):
    """The TypeError for Python data that numpy could only hold as objects, naming the first value
    that is refused: an integer beyond int64 (or uint64), or an object that is no int, float or
    complex (None, a Fraction, a str beside numbers)."""
    for value in x.ravel().tolist():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 ** 53:
            raise TypeError(_refused_integer(value, holder, op, name))
        if not isinstance(value, (int, float, complex)):
            raise TypeError(f"{op}: {name} holds {value!r} of type {type(value).__name__}; accepted: "
                            f"{_ACCEPTED[holder]}, and integers, bools and Python scalars that {holder} "
                            "holds exactly")


def _refused_integer(value, holder, op, name):
    """The message refusing the integer ``value`` (of magnitude 2**53 or more, or rounding in
    ``holder``): that ``holder`` cannot hold it exactly, or, where it can (``2**100`` in float32),
    that integers are taken below 2**53 only."""
    with np.errstate(over="ignore"):
        held = np.dtype(holder).type(value)
    if not np.isfinite(held) or int(held.real) != value:
        return (f"{op}: {name} holds a value that {holder} cannot hold exactly ({value!r}); round "
                f"explicitly, e.g. numpy.{holder}({name})")
    return (f"{op}: {name} holds an integer of magnitude 2**53 or more ({value!r}); integers are taken "
            f"below 2**53, where {holder} holds them exactly (convert explicitly, e.g. numpy.{holder}({name}))")


def unmasked(x, op, name):
    """``x``, or a TypeError naming it where it is a ``numpy.ma.MaskedArray``: its mask would be
    ignored (the rule of every entry point, :mod:`splitprec.accuracy`'s too)."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{op}: {name} is a numpy.ma.MaskedArray, whose mask would be ignored; "
                        f"expected a plain array (fill the masked values first, e.g. {name}.filled(0))")
    return x


def _read(x, op, name):
    if isinstance(x, np.ndarray):      # a subclass (numpy.matrix) as its plain ndarray: the engines
        x = unmasked(x, op, name)      # call ndarray methods a subclass may redefine (matrix.max)
        return Operand(x if type(x) is np.ndarray else x.view(np.ndarray), False, None)
    if is_cupy(x):
        gpu_module(op, f"{name} (a cupy array)")
        return Operand(x, False, None)
    if isinstance(x, np.generic):
        return Operand(np.asarray(x), False, None)
    if hasattr(x, "__dlpack__"):
        library = None if _is_split_array(x) else type(x).__module__.split(".")[0]
        return Operand(_from_dlpack(x, op, name), False, library)
    if hasattr(x, "__cuda_array_interface__"):
        return Operand(gpu_module(op, f"{name} (on a CUDA device)").asarray(x), False, None)
    if isinstance(x, (numbers.Number, list, tuple)):
        return Operand(_python_data(x, op, name), True, None)
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return Operand(np.asarray(x), False, None)
    raise TypeError(f"{op}: {name} of type {type(x).__name__} is not accepted; expected an array "
                    "(numpy, cupy, or any object with __dlpack__ or __cuda_array_interface__, such as "
                    "a torch tensor or a jax array), a Python scalar or a (nested) list")


def _python_data(x, op, name):
    """Python scalars and (nested) lists and tuples as a numpy array; ragged nesting, which numpy
    refuses with a message that names no argument, is a ValueError naming ``name``."""
    try:
        return np.asarray(x)
    except ValueError as err:
        raise ValueError(f"{op}: {name} is a nested sequence numpy cannot make an array of ({err}); "
                         "expected a scalar or lists of equal lengths at each level") from None


def _is_split_array(x):
    """True for a splitprec SplitArray (which marks itself for ``splitprec.matmul``)."""
    return hasattr(type(x), "__splitprec_matmul__")


def _from_dlpack(x, op, name):
    """A DLPack object's data as a numpy (CPU) or cupy (CUDA) array, sharing its memory."""
    device = int(x.__dlpack_device__()[0])
    if device == _DLPACK_CPU:
        from_dlpack = np.from_dlpack
    elif device in _DLPACK_CUDA:
        from_dlpack = gpu_module(op, f"{name} (on a CUDA device)").from_dlpack
    else:
        raise TypeError(f"{op}: {name} lives on DLPack device type {device}; expected the CPU (1) or "
                        "a CUDA device (2, 13)")
    if type(x).__module__.split(".")[0] == "torch" and str(x.dtype) == "torch.bfloat16":
        import torch                      # DLPack's bfloat16 has no numpy or cupy dtype: read the bits
        return _widen_bfloat16(from_dlpack(x.view(torch.int16)).view(np.uint16))
    try:
        return from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as err:
        if device == _DLPACK_CPU and hasattr(x, "__array__"):
            try:                          # e.g. a jax bfloat16 array: numpy reads it as ml_dtypes'
                return np.asarray(x)
            except Exception:
                pass
        raise TypeError(f"{op}: {name} ({type(x).__module__}.{type(x).__name__}) could not be read "
                        f"through DLPack: {err}") from err


def _back(x):
    """The function that gives a result in the library of ``x`` (identity for numpy data)."""
    if x is None:
        return _same
    if type(x).__module__.split(".")[0] == "torch":
        import torch
        return lambda result: torch.from_dlpack(_dlpack_strides(result))
    namespace_of = getattr(x, "__array_namespace__", None)
    if namespace_of is None:
        return _same
    from_dlpack = namespace_of().from_dlpack
    return lambda result: from_dlpack(_dlpack_strides(result))


def _same(result):
    return result


def _dlpack_strides(result):
    """``result``, copied if it has negative strides (which DLPack consumers may refuse)."""
    return namespace(result).ascontiguousarray(result) if any(s < 0 for s in result.strides) else result


def _widen_bfloat16(bits):
    """bfloat16 values, given as their uint16 bits, as float32: exact (the bits are float32's top half)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def exactly(x, dtype, op, name):
    """Integer, bool or Python-scalar data ``x`` as ``dtype``, or a TypeError if any value rounds."""
    xp = namespace(x)
    with np.errstate(over="ignore", invalid="ignore"):
        value = x.astype(dtype)
        if x.dtype.kind == "b":
            return value
        exact = xp.ones(x.shape, bool)
        for part in ("real", "imag") if x.dtype.kind == "c" else ("real",):
            wide, rounded = getattr(x, part).astype(np.float64), getattr(value, part).astype(np.float64)
            exact &= (rounded == wide) | xp.isnan(wide)
            if x.dtype.kind in "iu":
                exact &= xp.abs(wide) < 2.0 ** 53
    if not bool(exact.all()):
        first = x[~exact].ravel()[0].item()
        if x.dtype.kind in "iu":
            raise TypeError(_refused_integer(first, np.dtype(dtype), op, name))
        raise TypeError(f"{op}: {name} holds a value that {np.dtype(dtype)} cannot hold exactly "
                        f"({first!r}); round explicitly, e.g. numpy.{np.dtype(dtype)}({name})")
    return value


def write(y, out, op):
    """``y``, or ``y`` written into ``out`` (of the result's kind and shape, writable, of a dtype that
    holds ``y``'s exactly: float64 takes a float32 result, as numpy's ``out=`` does), which is
    returned; a TypeError or ValueError naming ``out`` otherwise (module docstring)."""
    if out is None:
        return y
    if type(out) is not type(y) or not np.can_cast(y.dtype, out.dtype, "safe"):
        got = f"{type(out).__name__} of dtype {out.dtype}" if hasattr(out, "dtype") else f"a {type(out).__name__}"
        raise TypeError(f"{op}: out must be a {type(y).__name__} of dtype {y.dtype} (or one that holds it "
                        f"exactly); got {got}")
    if tuple(out.shape) != tuple(y.shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}; expected the result's shape "
                         f"{tuple(y.shape)}")
    writable(out, op)
    out[...] = y
    return out


def writable(out, op):
    """A ValueError naming ``out`` when the array ``out`` is read-only, a TypeError when it is of an
    immutable kind (a jax array; neither numpy's nor jax's own error names ``out``); anything else
    without numpy's ``writeable`` flag (cupy arrays, torch tensors, None) passes."""
    if type(out).__module__.split(".")[0] in _IMMUTABLE:
        raise TypeError(f"{op}: out is a {type(out).__module__}.{type(out).__name__}, an immutable "
                        "array that cannot be written in place; expected out=None (the result is "
                        "returned) or a writable array of the result's kind")
    if not getattr(getattr(out, "flags", None), "writeable", True):
        raise ValueError(f"{op}: out is read-only; expected a writable array")
