"""numpy.fft's helper routines and scipy.fft's ``next_fast_len``, for :mod:`splitprec.fft`.

``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` compute no transform: they give numpy's
values bit for bit (frequencies in float64, as numpy; shifts move values and keep the dtype), on
numpy or cupy. ``next_fast_len`` says which lengths this engine runs without Bluestein.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ._backend import gpu_module, namespace
from ._fft_lines import axis_index
from .interop import Array, ArrayLike, read

_DEVICES = (None, "cpu", "gpu")


def _count(n, op, name="n", least=1):
    """An integer count of at least ``least``; TypeError for bools and non-integers, ValueError below."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got {n!r} (a bool is not a length)")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {n!r}") from None
    if n < least:
        raise ValueError(f"{op}: {name} must be >= {least}, got {n}")
    return n


def _module(device, op):
    if device not in _DEVICES:
        raise ValueError(f"{op}: unknown device {device!r}; expected None, 'cpu' or 'gpu'")
    return gpu_module(op, "device='gpu'") if device == "gpu" else np


def fftfreq(n: int, d: float = 1.0, device: str | None = None) -> Array:
    """Sample frequencies of a length-``n`` transform (``numpy.fft.fftfreq``): ``k / (n * d)`` for
    ``k = 0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1``, float64, the same bits as numpy's.

    ``device``: ``"gpu"`` gives a cupy array (the same values: the same float64 operations).

    Examples
    --------
    >>> import splitprec as sp
    >>> sp.fft.fftfreq(5, d=0.5)
    array([ 0. ,  0.4,  0.8, -0.8, -0.4])
    """
    n, xp = _count(n, "fftfreq"), _module(device, "fftfreq")
    k = xp.arange(n)
    k[(n + 1) // 2:] -= n
    return k * (1.0 / (n * d))


def rfftfreq(n: int, d: float = 1.0, device: str | None = None) -> Array:
    """Sample frequencies of :func:`splitprec.fft.rfft` of length ``n`` (``numpy.fft.rfftfreq``):
    ``k / (n * d)`` for ``k = 0 .. n // 2``, float64, the same bits as numpy's."""
    n, xp = _count(n, "rfftfreq"), _module(device, "rfftfreq")
    return xp.arange(n // 2 + 1) * (1.0 / (n * d))


def _shift(x, axes, op, sign):
    """``x`` rolled by ``sign * (length // 2)`` along ``axes`` (default: all), in ``x``'s kind."""
    (operand,), back = read(op, x=x)
    x = operand.array
    axes = range(x.ndim) if axes is None else [axes] if np.ndim(axes) == 0 else axes
    axes = [axis_index(ax, x.ndim, op) for ax in axes]
    return back(namespace(x).roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes))


def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """Move the zero frequency to the centre (``numpy.fft.fftshift``): a roll by ``n // 2`` along
    each axis of ``axes`` (default: all); any dtype, the input's kind (numpy, cupy, DLPack library).

    Examples
    --------
    >>> import splitprec as sp
    >>> sp.fft.fftshift(sp.fft.fftfreq(5))
    array([-0.4, -0.2,  0. ,  0.2,  0.4])
    """
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of :func:`fftshift` (``numpy.fft.ifftshift``): a roll by ``-(n // 2)``."""
    return _shift(x, axes, "ifftshift", -1)


def _smallest_smooth(n, even):
    """The smallest ``m >= n`` with no prime factor above 7 (``even``: also divisible by 2)."""
    best = 1 << max((n - 1).bit_length(), int(even))
    p7 = 1
    while p7 < best:
        p75 = p7
        while p75 < best:
            m = p75
            while m < best:
                quotient = -(-n // m)               # m * 2**e >= n for 2**e >= quotient
                best = min(best, m << max((quotient - 1).bit_length(), int(even)))
                m *= 3
            p75 *= 5
        p7 *= 7
    return best


def next_fast_len(target: int, real: bool = False) -> int:
    """The smallest transform length ``>= target`` that this engine runs fast: one with no prime
    factor above 7 (``scipy.fft.next_fast_len``'s signature, for this engine's lengths: scipy's
    pocketfft also runs 11 fast, and takes only 5-smooth lengths with ``real=True``; 0 gives 0).

    Why: such lengths run as Stockham passes of radix 16, 8, 4, 2 and 9, 7, 5, 3 (on Hopper GPUs in
    one fused kernel up to 4096, in two or three launches up to 2**24), while any larger prime
    factor sends the transform through Bluestein's algorithm: a convolution by two power-of-two
    transforms of length >= 2n - 1, several times the work (``splitprec.engines.plan``). With
    ``real=True`` (for ``rfft``/``irfft``) the length is also even, where the transform packs pairs
    of real values into one complex transform of half the length (``target`` 1 stays 1).

    Examples
    --------
    >>> import splitprec as sp
    >>> sp.fft.next_fast_len(1009), sp.fft.next_fast_len(99, real=True)
    (1024, 100)
    """
    target = _count(target, "next_fast_len", "target", least=0)
    return target if target <= 1 else _smallest_smooth(target, even=bool(real))
