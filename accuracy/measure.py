"""Measure a scheme against the exact reference and its bound: ``measure_gemm``, ``measure_fft``, ``check``.

Errors: ``normwise = ||C_hat - C||_F / ||C||_F`` over the finite entries of the exact product ``C``,
and ``ratio = max |C_hat - C| / bound`` per entry. An entry where ``C`` is NaN/inf counts as a
violation (ratio inf) unless ``C_hat`` holds the same NaN/inf there; an entry whose bound is inf
(the result may overflow float32) accepts any value, ±inf included.
"""
from dataclasses import dataclass, field
import time

import numpy as np

import splitprec

from .bounds import fft_bound, gemm_bound, schemes as bounded_schemes
from .reference import exact_dft, exact_matmul


@dataclass
class Measurement:
    """One scheme on one input: errors, bound ratio, time (seconds of the splitprec call)."""

    scheme: str
    op: str
    engine: str
    normwise: float
    ratio: float
    native: float            # normwise error of the native float32 operation on the same input
    seconds: float
    case: str = ""
    params: dict = field(default_factory=dict)
    output: object = field(default=None, repr=False, compare=False)   # the computed result

    @property
    def violated(self):
        return not self.ratio <= 1.0


def _normwise(computed, exact):
    finite = np.isfinite(exact)
    diff = np.where(finite, computed - exact, 0.0)
    ref = np.linalg.norm(np.where(finite, exact, 0.0))
    err = np.linalg.norm(diff)
    return float(err / ref) if ref > 0 else float(err > 0) * np.inf if err else 0.0


def _ratio(computed, exact, bound):
    """Largest ``|computed - exact| / bound``; a NaN/inf pattern mismatch gives inf."""
    finite = np.isfinite(exact)
    same_nonfinite = np.where(np.isnan(exact), np.isnan(computed), computed == exact)
    if not np.all(np.where(finite, True, same_nonfinite)):
        return np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(np.where(finite, computed.astype(np.float64) - exact, 0.0))
        r = np.where((err == 0) | np.isposinf(bound), 0.0, err / bound)
    r = np.where(np.isnan(r), np.inf, r)          # NaN from finite inputs: a violation
    return float(r.max()) if r.size else 0.0


def _to_device(engine, *arrays):
    if engine == "cpu":
        return arrays, np.asarray
    import cupy
    return tuple(cupy.asarray(x) for x in arrays), cupy.asnumpy


def measure_gemm(a, b, scheme, engine="cpu", *, reference=None, native=None):
    """Run ``splitprec.matmul(a, b, dtype=scheme)`` on ``engine`` and compare with the exact product.

    ``reference`` (``exact_matmul(a, b)``) and ``native`` (the float32 matmul's normwise error) may
    be passed in when several schemes share one input.
    """
    exact = exact_matmul(a, b) if reference is None else reference
    if native is None:
        with np.errstate(all="ignore"):
            native = _normwise(np.matmul(a, b).astype(np.float64), exact)
    (da, db), back = _to_device(engine, a, b)
    start = time.perf_counter()
    computed = back(splitprec.matmul(da, db, dtype=scheme)).astype(np.float64)
    seconds = time.perf_counter() - start
    bound = gemm_bound(a, b, scheme, engine=engine)
    with np.errstate(all="ignore"):
        return Measurement(splitprec.dtype(scheme).name, "gemm", engine, _normwise(computed, exact),
                           _ratio(computed, exact, bound), native, seconds, output=computed)


def measure_fft(x, scheme, engine="cpu", *, reference=None, native=None):
    """Run ``splitprec.fft.fft(x, dtype=scheme)`` and compare with :func:`exact_dft` and its bound."""
    exact = exact_dft(x) if reference is None else reference
    if native is None:
        native = _normwise(np.fft.fft(x.astype(np.complex64)).astype(np.complex128), exact)
    (dx,), back = _to_device(engine, x)
    start = time.perf_counter()
    computed = back(splitprec.fft.fft(dx, dtype=scheme)).astype(np.complex128)
    seconds = time.perf_counter() - start
    err = np.linalg.norm(computed - exact)
    bound = fft_bound(x, scheme, engine) * np.linalg.norm(exact)
    ratio = 0.0 if err == 0 else float(err / bound) if bound > 0 else np.inf
    return Measurement(splitprec.dtype(scheme).name, "fft", engine, _normwise(computed, exact),
                       ratio, native, seconds, output=computed)


@dataclass
class CheckResult:
    """The table returned by :func:`check`; ``str()`` and ``to_markdown()`` render it."""

    rows: list
    shape: tuple

    def to_markdown(self):
        head = ("| scheme | normwise error | max error/bound | vs native fp32 | time (s) |\n"
                "|---|---|---|---|---|\n")
        body = "".join(f"| {r.scheme} | {r.normwise:.3g} | {r.ratio:.3g} | "
                       f"{_versus(r.normwise, r.native)} | {r.seconds:.3g} |\n" for r in self.rows)
        return head + body

    def __str__(self):
        lines = [f"{'scheme':<8} {'normwise':>10} {'err/bound':>10} {'vs fp32':>10} {'time s':>8}"]
        lines += [f"{r.scheme:<8} {r.normwise:>10.3g} {r.ratio:>10.3g} "
                  f"{_versus(r.normwise, r.native):>10} {r.seconds:>8.3g}" for r in self.rows]
        native = self.rows[0].native if self.rows else float("nan")
        lines.append(f"native float32 matmul normwise error: {native:.3g}; shape {self.shape}")
        return "\n".join(lines)


def _versus(error, native):
    if native == 0:
        return "exact" if error == 0 else "inf"
    return f"{error / native:.3g}x"


def check(a, b, schemes=None, *, engine="cpu"):
    """How accurate each scheme is on *your* matrices: a table of errors, bound ratios and times.

    Parameters
    ----------
    a, b : array_like, float32, ndim >= 2
        The operands, as they would be passed to ``splitprec.matmul``.
    schemes : iterable of str, optional
        Scheme names; by default every registered scheme that has a bound
        (``accuracy.bounds.schemes()``: the float32-target schemes of ``splitprec.dtypes()``).
    engine : {"cpu", "gpu"}, keyword-only

    Returns
    -------
    CheckResult
        ``.rows`` holds one :class:`Measurement` per scheme; ``str()`` is a plain table,
        ``.to_markdown()`` a markdown one. "vs native fp32" is the scheme's normwise error over
        that of ``numpy.matmul`` in float32 (below 1: more accurate than float32 BLAS).

    Accuracy: the ratios use ``accuracy.gemm_bound``; a ratio above 1 is a bug (see docs/bounds.md).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.standard_normal((8, 32), dtype=np.float32); b = rng.standard_normal((32, 8), dtype=np.float32)
    >>> result = check(a, b, ["bf16x9", "tf32"])
    >>> [row.ratio <= 1 for row in result.rows]
    [True, True]
    """
    a = np.asarray(a)
    b = np.asarray(b)
    names = bounded_schemes() if schemes is None else [splitprec.dtype(s).name for s in schemes]
    exact = exact_matmul(a, b)
    with np.errstate(all="ignore"):
        native = _normwise(np.matmul(a, b).astype(np.float64), exact)
    rows = [measure_gemm(a, b, s, engine, reference=exact, native=native) for s in names]
    return CheckResult(rows, (a.shape, b.shape))
