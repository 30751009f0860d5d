"""``sort`` and ``argsort`` of the standard (numpy's have no ``descending``)."""
import numpy as np


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted along ``axis``; ``descending`` reverses the order (equal values are identical)."""
    ascending = np.sort(x, axis=axis, stable=stable)
    return np.flip(ascending, axis=axis) if descending else ascending


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis``; a stable descending sort keeps equal values in
    their order, so it sorts the reversed array and maps the indices back."""
    if not descending:
        return np.argsort(x, axis=axis, stable=stable)
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, stable=stable), axis=axis)
