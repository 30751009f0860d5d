"""splitprec: fp32-accurate matrix products and FFTs from narrow tensor-core formats."""
from .dtypes import SplitDType, dtype, dtypes
from .linalg import matmul
from . import fft

__all__ = ["SplitDType", "dtype", "dtypes", "matmul", "fft"]
