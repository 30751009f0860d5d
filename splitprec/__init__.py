"""splitprec: fp32-accurate matrix products and FFTs from narrow tensor-core formats."""
from ._version import __version__
from ._backend import UnsupportedDeviceError
from ._defaults import default_scheme
from .array import SplitArray, empty, full, ones, zeros
from .dtypes import SplitDType, dtype, dtypes
from .linalg import matmul
from . import _backend, fft
from .tracking import TrackedArray, asarray
try:
    from . import array_api  # noqa: F401  (registers SplitArray.__array_namespace__'s module)
except ImportError:          # numpy < 2.1: SplitArray.__array_namespace__ says so
    pass


def _dask_layer():
    from . import dask
    return dask


_backend.supply_dask_layer(_dask_layer)

__all__ = ["SplitDType", "dtype", "dtypes", "default_scheme", "matmul", "fft",
           "SplitArray", "TrackedArray", "asarray", "empty", "full", "ones", "zeros", "UnsupportedDeviceError",
           "__version__"]


def __dir__():
    """The public names, and the public subpackages that are imported (``array_api``, ``accuracy``)."""
    return sorted(__all__ + [name for name in ("accuracy", "array_api") if name in globals()])
