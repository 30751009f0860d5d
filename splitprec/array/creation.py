"""Creation of SplitArrays: ``empty full zeros ones`` and numpy's ``*_like`` functions (``asarray``
is in core). A fill value must be float32-exact, as every datum (docs/arrays.md)."""
import numpy as np

from .._backend import device_name, gpu_module, namespace
from ..dtypes import SplitDType
from .convert import DEVICES, as_float32, is_scheme_name, on_device, scheme
from .core import SplitArray
from .functions import implements


def _creation(shape, dtype, device, op):
    """An uninitialized float32 value of ``shape`` on ``device`` and the scheme, for ``op``."""
    d = scheme(dtype, op)
    if device not in (None, *DEVICES):
        raise ValueError(f"{op}: unknown device {device!r}; expected 'cpu' or 'gpu'")
    xp = gpu_module(op, "device='gpu'") if device == "gpu" else np
    return xp.empty(shape, np.float32), d


def _fill(value, fill_value, op):
    if fill_value is not None:
        data = fill_value._value if isinstance(fill_value, SplitArray) else as_float32(fill_value, op, "fill_value")
        placed = isinstance(fill_value, (SplitArray, np.ndarray)) or device_name(fill_value) == "gpu"
        value[...] = on_device(data, device_name(value), op, "fill_value", placed=placed)
    return value


def empty(shape, dtype=None, *, device=None):
    """An uninitialized SplitArray (``asarray`` explains ``dtype`` and ``device``)."""
    return SplitArray._wrap(*_creation(shape, dtype, device, "empty"))


def _filled(shape, fill_value, dtype, device, op):
    value, d = _creation(shape, dtype, device, op)
    return SplitArray._wrap(_fill(value, fill_value, op), d)


def full(shape, fill_value, dtype=None, *, device=None):
    """A SplitArray of ``shape`` filled with ``fill_value`` (which float32 must hold exactly)."""
    return _filled(shape, fill_value, dtype, device, "full")


def zeros(shape, dtype=None, *, device=None):
    """A SplitArray of zeros (``asarray`` explains ``dtype`` and ``device``)."""
    return _filled(shape, 0, dtype, device, "zeros")


def ones(shape, dtype=None, *, device=None):
    """A SplitArray of ones (``asarray`` explains ``dtype`` and ``device``)."""
    return _filled(shape, 1, dtype, device, "ones")


def _is_scheme(dtype):
    return isinstance(dtype, SplitDType) or (isinstance(dtype, str) and is_scheme_name(dtype))


def _like(name, fill):
    """numpy's ``name`` (``zeros_like``, ...) for a SplitArray prototype, with numpy's signature
    (``full_like`` alone takes a fill value): a SplitArray of the prototype's scheme, or of
    ``dtype`` when that is a scheme; another numpy dtype than float32 gives numpy's (cupy's) array
    of that dtype."""
    function = getattr(np, name)

    def like(prototype, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
        if dtype is not None and not _is_scheme(dtype) and np.dtype(dtype) != np.float32:
            extra = () if name != "full_like" else \
                (fill_value._value if isinstance(fill_value, SplitArray) else fill_value,)
            return function(prototype._value, *extra, dtype=dtype, order=order, shape=shape)
        d = scheme(dtype if _is_scheme(dtype) else prototype._dtype, name)
        if device in (None, prototype.device):
            value = namespace(prototype._value).empty_like(prototype._value, dtype=np.float32,
                                                           order=order, shape=shape)
        else:
            value, _ = _creation(prototype.shape if shape is None else shape, d, device, name)
        return SplitArray._wrap(_fill(value, fill_value, name), d)

    if name == "full_like":
        handler = like
    else:
        def handler(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
            return like(prototype, fill, dtype, order, subok, shape, device=device)
    handler.__doc__ = f"``numpy.{name}`` of a SplitArray prototype (``_like``)."
    return handler


for _name, _fill_value in (("empty_like", None), ("zeros_like", 0), ("ones_like", 1), ("full_like", None)):
    implements(getattr(np, _name))(_like(_name, _fill_value))
