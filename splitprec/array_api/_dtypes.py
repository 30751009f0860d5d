"""Data type functions and the inspection namespace of splitprec.array_api.

A SplitArray's dtype (its scheme) stands for float32 wherever the standard takes a dtype; results
that are float32 keep the promoted scheme of the SplitArrays among the inputs.
"""
import numpy as np

from ..array.core import SplitArray, promote
from ..dtypes import SplitDType
from ._creation import names_scheme, split_dtype

_KINDS = {"bool": ["bool"], "signed integer": ["int8", "int16", "int32", "int64"],
          "unsigned integer": ["uint8", "uint16", "uint32", "uint64"], "real floating": ["float32"]}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"]


def _unknown_kind(op, kind):
    return ValueError(f"{op}: unknown kind {kind!r}; expected one of "
                      f"{', '.join(map(repr, sorted(_KINDS)))} or 'complex floating'")


def _numpy(x):
    """numpy's dtype for ``x`` (a dtype or an array): a scheme or a SplitArray stands for float32."""
    if isinstance(x, (SplitArray, SplitDType)):
        return np.dtype(np.float32)
    return x if isinstance(x, (np.dtype, type, str)) else x.dtype


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` as ``dtype``: float32 keeps a SplitArray's scheme, a scheme sets it."""
    is_split, d = split_dtype(dtype)
    if isinstance(x, SplitArray):
        moved = x if device is None else x.to_device(device)
        if not is_split:
            return moved._value.astype(d)
        d = d if names_scheme(dtype) else x._dtype
        return moved if not copy and moved is x and d == x._dtype else SplitArray._wrap(moved._value.copy(), d)
    from ._creation import asarray
    return asarray(x.astype(np.float32 if is_split else d, copy=copy), dtype=dtype, device=device)


def can_cast(from_, to, /):
    return np.can_cast(_numpy(from_), _numpy(to))


class _FInfo:
    """The standard's ``finfo``: numpy's values as Python floats."""

    def __init__(self, info):
        self.bits, self.dtype = info.bits, info.dtype
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)

    def __repr__(self):
        return f"finfo(bits={self.bits}, eps={self.eps!r}, max={self.max!r}, min={self.min!r}, dtype={self.dtype})"


def finfo(type, /):
    return _FInfo(np.finfo(_numpy(type)))


def iinfo(type, /):
    return np.iinfo(_numpy(type))


def isdtype(dtype, kind):
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS and kind != "complex floating":
            raise _unknown_kind("isdtype", kind)
        return np.dtype(_numpy(dtype)).name in _KINDS.get(kind, ())
    if not isinstance(kind, (np.dtype, SplitDType, type)):
        raise TypeError(f"isdtype: kind {kind!r} of type {type(kind).__name__} is not a kind; expected a "
                        "dtype, a kind name such as 'real floating', or a tuple of them")
    return np.dtype(_numpy(dtype)) == np.dtype(_numpy(kind))


def result_type(*arrays_and_dtypes):
    """numpy's promotion of the inputs; a float32 result is the promoted scheme of the schemes
    among them (float32 if none); a wider float result than float32 is refused (TypeError)."""
    schemes = [x._dtype if isinstance(x, SplitArray) else x for x in arrays_and_dtypes
               if isinstance(x, (SplitArray, SplitDType))]
    numpy_inputs = [getattr(x, "dtype", x) if not isinstance(x, (SplitArray, SplitDType)) else np.dtype(np.float32)
                    for x in arrays_and_dtypes]
    result = np.result_type(*numpy_inputs)
    if result == np.float32:
        return promote(*schemes) if schemes else result
    if result.kind in "fc":
        raise TypeError(f"result_type: {', '.join(map(str, numpy_inputs))} promote to {result}, "
                        "which splitprec.array_api does not hold; expected float32, bool or "
                        "integer inputs that promote within them")
    return result


class _Info:
    """The standard's inspection namespace (``__array_namespace_info__()``)."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        try:
            import cupy
            return ["cpu", "gpu"] if cupy.cuda.is_available() else ["cpu"]
        except Exception:
            return ["cpu"]

    def default_dtypes(self, *, device=None):
        self._check_device(device, "default_dtypes")
        return {"real floating": np.dtype(np.float32), "complex floating": None,
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        self._check_device(device, "dtypes")
        kinds = [kind] if isinstance(kind, str) else list(kind) if kind is not None else ["bool", "numeric"]
        unknown = [k for k in kinds if k not in _KINDS and k != "complex floating"]
        if unknown:
            raise _unknown_kind("dtypes", unknown[0])
        names = [n for k in kinds for n in _KINDS.get(k, ())]
        return {n: np.dtype(n) for n in dict.fromkeys(names)}

    def _check_device(self, device, op):
        """A ValueError for a ``device`` that is not one of :meth:`devices` (numpy's info raises too)."""
        if device is not None and device not in self.devices():
            raise ValueError(f"{op}: unknown device {device!r}; expected None or one of "
                             f"{', '.join(map(repr, self.devices()))}")


def __array_namespace_info__():
    return _Info()
