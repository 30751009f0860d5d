"""Read-only numpy views that lead back to no writable array (``np.asarray(a)``, ``a.terms``)."""
import weakref

import numpy as np


class _ReadOnly:
    """The ``__array_interface__`` of an array with its read-only flag set, for ``np.asarray``:
    the arrays numpy makes from it are read-only for good (numpy refuses to set ``writeable`` on
    them, as their base is no array and exports no writable buffer), and they lead back to no
    writable array: the memory's owner is kept alive by a ``weakref.finalize`` of this object,
    not by one of its attributes. Each read of the interface is a fresh dict, so that changing one
    (its read-only flag) changes no array made later."""

    __slots__ = ("_items", "__weakref__")

    def __init__(self, value):
        interface = dict(value.__array_interface__)
        interface["data"] = (interface["data"][0], True)
        self._items = tuple(interface.items())
        weakref.finalize(self, _release, value).atexit = False

    @property
    def __array_interface__(self):
        return {key: list(item) if isinstance(item, list) else item for key, item in self._items}


def _release(value):
    """The finalizer of a :class:`_ReadOnly` (it only holds ``value`` until then)."""


def read_only(value):
    """A read-only numpy view of numpy array ``value`` from which no writable alias can be made."""
    return np.asarray(_ReadOnly(value))
