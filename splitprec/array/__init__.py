"""SplitArray: numpy-like arrays of a split-precision scheme (docs/arrays.md).

``core`` holds the class and ``asarray``; ``convert`` the rules for data in; ``readonly`` the
read-only views it exports; ``creation`` the other constructors; ``functions`` (shapes, reductions), ``contractions`` (in the scheme) and ``ufuncs``
the numpy functions SplitArrays implement; ``fallback`` runs every other numpy function on the
float32 values.
"""
from .core import SplitArray, asarray
from . import contractions, creation, fallback, functions, ufuncs  # noqa: F401  (fill core.HANDLED, PROTOCOLS)
from .creation import empty, full, ones, zeros

__all__ = ["SplitArray", "asarray", "empty", "full", "ones", "zeros"]
