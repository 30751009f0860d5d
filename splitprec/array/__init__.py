"""SplitArray: numpy-like arrays of a split-precision scheme (docs/arrays.md).

``core`` holds the class and ``asarray``, ``creation`` the other constructors, ``functions`` the
numpy functions SplitArrays implement (the ``__array_function__`` registry).
"""
from .core import SplitArray, asarray
from .creation import empty, full, ones, zeros
from . import functions  # noqa: F401  (fills core.HANDLED)

__all__ = ["SplitArray", "asarray", "empty", "full", "ones", "zeros"]
