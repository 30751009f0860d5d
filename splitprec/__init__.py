"""splitprec: fp32-accurate matrix products and FFTs from narrow tensor-core formats."""
from .array import SplitArray, asarray, empty, full, ones, zeros
from .dtypes import SplitDType, dtype, dtypes
from .linalg import matmul
from . import fft

__all__ = ["SplitDType", "dtype", "dtypes", "matmul", "fft",
           "SplitArray", "asarray", "empty", "full", "ones", "zeros"]
