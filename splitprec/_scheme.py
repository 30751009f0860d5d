"""What every scheme record shares (SplitDType, Ozaki2DType, Ozaki2AdaptiveDType): numpy's dtype
protocol, and equality, hashing, printing and pickling by the scheme's registered name.

A record equals the same scheme, every name and alias of it (case-insensitively, as
:func:`splitprec.dtype` resolves them) and numpy's dtype of its storage, ``np.dtype(d)``: float32
for the float32-target schemes, float64 for the fp64 ones. It hashes as that numpy dtype, so that
equal objects hash alike; names compare equal without hashing alike, as ``np.dtype("float32") ==
"float32"`` does. The records are frozen dataclasses declared with ``eq=False``, so that these
methods, not the dataclass's field-by-field ones, apply.
"""
import dataclasses

import numpy as np


def _registered(name):
    """The registered record named (or aliased) ``name`` in any case, or None. Imported here, not at
    the top: the registry (splitprec/dtypes.py) is built from the records defined on this base."""
    from .dtypes import _LOOKUP
    return _LOOKUP.get(name.lower())


class SchemeRecord:
    """Base of the scheme records: see the module docstring."""

    __slots__ = ()

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, SchemeRecord):
            return self.name == other.name
        if isinstance(other, str):
            return getattr(_registered(other), "name", None) == self.name
        if isinstance(other, np.dtype) or (isinstance(other, type) and issubclass(other, np.generic)):
            return np.dtype(other) == self.dtype
        return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __reduce__(self):
        """A registered scheme pickles (and copies) as its name, so that it comes back as the
        registry's record, which ``d == "bf16x9"`` and the plan caches expect (dask's process
        schedulers pickle every task's scheme); a variant of one (``dataclasses.replace``) as its
        fields."""
        fields = tuple(getattr(self, f.name) for f in dataclasses.fields(self))
        registered = _registered(self.name)
        if type(registered) is type(self) and registered.name == self.name and \
                fields == tuple(getattr(registered, f.name) for f in dataclasses.fields(self)):
            from .dtypes import dtype
            return dtype, (self.name,)
        return type(self), fields

    @property
    def dtype(self):
        """numpy's dtype of the storage, the ``target`` (the ``dtype`` attribute protocol:
        ``np.dtype(d)``; dask arrays of SplitArray chunks, whose ``dtype`` is the scheme, add,
        reduce and rechunk by it)."""
        return np.dtype(self.target)

    @property
    def itemsize(self):
        """Bytes per element of the storage (dask sizes chunks by it)."""
        return self.dtype.itemsize
