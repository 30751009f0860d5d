"""splitprec: fp32-accurate matrix products and FFTs from narrow tensor-core formats."""
from ._version import __version__
from ._backend import UnsupportedDeviceError
from ._defaults import default_scheme
from .array import SplitArray, asarray, empty, full, ones, zeros
from .dtypes import SplitDType, dtype, dtypes
from .linalg import matmul
from . import _backend, fft


def _dask_layer():
    from . import dask
    return dask


_backend.supply_dask_layer(_dask_layer)

__all__ = ["SplitDType", "dtype", "dtypes", "default_scheme", "matmul", "fft",
           "SplitArray", "asarray", "empty", "full", "ones", "zeros", "UnsupportedDeviceError",
           "__version__"]
