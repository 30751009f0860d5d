"""Error tracking: TrackedArrays, whose every entry carries a rigorous bound on its error (docs/tracking.md).

``core`` holds the class; ``inputs`` the data rules and ``asarray(..., track_error=...)``;
``elementwise``, ``reductions``, ``contractions``, ``transforms`` and ``shapes`` the operations and
their propagation rules; ``rounding`` the rounding model they share.
"""
from .core import TrackedArray
from .inputs import asarray
from . import contractions, elementwise, reductions, shapes, transforms  # noqa: F401  (fill core.UFUNCS, FUNCTIONS)

__all__ = ["TrackedArray", "asarray"]
