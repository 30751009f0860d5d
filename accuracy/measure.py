"""Measure a scheme against the exact reference and its bound: ``measure_gemm``, ``measure_fft`` (also
for ``rfft``), ``check``.

Errors: ``normwise = ||C_hat - C||_F / ||C||_F`` over the finite entries of the exact product ``C``,
and ``ratio = max |C_hat - C| / bound`` per entry. An entry where the inputs make ``C`` NaN/inf
counts as a violation (ratio inf) unless ``C_hat`` holds the same NaN/inf there; an entry whose
bound is inf (the result may overflow float32, or float64 for the fp64 schemes) accepts any value,
±inf included. ``ratio_probabilistic`` is the same against the probabilistic bound
(``kind="probabilistic"``, confidence :data:`CONFIDENCE`), and ``outside_probabilistic`` the
fraction of entries (FFT: of lines) above it, which that model expects to be at most
``1 - CONFIDENCE`` on random data. "native" is the operation in the operands' precision: numpy's
matmul of C-contiguous copies of the operands (:func:`native_error`: one summation order whatever
their layout), float32 BLAS (SGEMM) for the float32-target schemes and float64 BLAS (DGEMM) for the
fp64 schemes; for the FFT a single-precision transform, ``scipy.fft`` on the CPU
(numpy's complex64 FFT computes in float64 and rounds once: a correctly rounded result, not a
float32 one) and cuFFT (``cupy.fft``) for the GPU engine.
"""
from dataclasses import dataclass, field
import math
import time

import numpy as np

import splitprec

from .bounds import gemm_bound, schemes as bounded_schemes
from .fft_bounds import fft_bound, rfft_bound
from .ozaki_bound import matmul_shapes
from .reference import _nonfinite_pattern, as_matrices, exact_dft, exact_matmul, read_operands, vector_result

TARGET_OF_DTYPE = {"float16": "float32", "float32": "float32", "float64": "float64"}
NATIVE = {"float32": "fp32", "float64": "fp64"}      # what "native" is, per scheme target
CONFIDENCE = 0.999                                   # of the probabilistic bounds measured here
ENGINES = ("cpu", "gpu")


def gemm_schemes(target=None):
    """Every registered scheme with a GEMM bound, optionally of one ``target``: the float32-target
    schemes of ``accuracy.bounds.schemes()``, then the fp64 schemes ``ozaki2_int8x<N>``.

    ``target`` is ``"float32"`` or ``"float64"``, or the operands' dtype: ``"float16"`` gives the
    float32-target schemes, as ``splitprec.matmul`` widens float16 operands exactly to float32.

    Raises
    ------
    ValueError
        Any other ``target``.
    """
    if target is not None and target not in TARGET_OF_DTYPE:
        raise ValueError(f"gemm_schemes: unknown target {target!r}; expected None, "
                         f"{', '.join(map(repr, TARGET_OF_DTYPE))}")
    wanted = None if target is None else TARGET_OF_DTYPE[target]
    names = bounded_schemes() + splitprec.dtypes("float64")
    return [n for n in names if wanted is None or splitprec.dtype(n).target == wanted]


def gpu_available():
    """True when cupy imports and sees a usable CUDA device."""
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


@dataclass
class Measurement:
    """One scheme on one input: errors, bound ratio, time (seconds of the splitprec call)."""

    scheme: str
    op: str
    engine: str
    normwise: float
    ratio: float
    native: float            # normwise error of numpy's operation in the operands' precision
    seconds: float
    case: str = ""
    params: dict = field(default_factory=dict)
    output: object = field(default=None, repr=False, compare=False)   # the computed result
    ratio_probabilistic: float = math.nan      # max error / probabilistic bound
    outside_probabilistic: float = 0.0         # fraction of entries (lines) above that bound

    @property
    def violated(self):
        return not self.ratio <= 1.0

    @property
    def target(self):
        """The scheme's target, ``"float32"`` or ``"float64"`` (the native operation's precision)."""
        return splitprec.dtype(self.scheme).target


FP32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103       # the least magnitude float32 rounds to ±inf


def _normwise(computed, exact, target="float64"):
    """Normwise relative error of ``computed`` over the finite entries of ``exact``; for a float32
    ``target``, entries whose exact value rounds past float32's range and that ``computed`` holds as
    that ±inf (the target's correct result) count as exact."""
    finite = np.isfinite(exact)
    if target == "float32":
        with np.errstate(invalid="ignore"):
            finite &= ~((np.abs(exact) >= FP32_OVERFLOW) & (computed == np.copysign(np.inf, exact)))
    ref_values = np.where(finite, exact, 0.0)
    peak = float(np.abs(ref_values).max()) if ref_values.size else 0.0
    # A power of two brings the largest entry near 1, so that the norms of results near either
    # end of float64's range neither overflow nor underflow.
    scale = np.ldexp(1.0, int(np.clip(-np.frexp(peak)[1], -1000, 1000))) if peak > 0 else 1.0
    diff = np.where(finite, computed * scale - exact * scale, 0.0)
    ref = np.linalg.norm(ref_values * scale)
    err = np.linalg.norm(diff)
    return float(err / ref) if ref > 0 else float(err > 0) * np.inf if err else 0.0


def _ratio(computed, exact, bound, from_inputs=None):
    """Largest ``|computed - exact| / bound``; a NaN/inf pattern mismatch gives inf.

    ``from_inputs`` marks the entries that NaN/inf inputs make non-finite (default: every
    non-finite entry of ``exact``); ``computed`` must hold the same NaN/inf there. Elsewhere an
    infinite ``exact`` is an exact product beyond float64's range: accepted where the bound is inf.
    """
    finite = np.isfinite(exact)
    forced = ~finite if from_inputs is None else from_inputs
    same_nonfinite = np.where(np.isnan(exact), np.isnan(computed), computed == exact)
    if not np.all(np.where(forced, same_nonfinite, True)):
        return np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(np.where(finite, computed.astype(np.float64) - exact, 0.0))
        r = np.where((err == 0) | np.isposinf(bound), 0.0, err / bound)
    r = np.where(np.isnan(r) | (~finite & ~forced & ~np.isposinf(bound)), np.inf, r)
    return float(r.max()) if r.size else 0.0


def native_error(a, b, exact):
    """Normwise error of the native product of ``a`` and ``b`` against ``exact``: ``numpy.matmul``
    of C-contiguous copies of the operands, in their own precision (float32 BLAS, SGEMM; DGEMM for
    float64). The copies fix the summation order, so that the baseline does not depend on the
    operands' memory layout: BLAS sums a transposed or strided operand in another order, and a
    scheme's error over native's then changed with the layout of ``A`` in ``check(A.T, A)`` alone."""
    with np.errstate(all="ignore"):
        product = np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))
        return _normwise(product.astype(np.float64), exact, TARGET_OF_DTYPE.get(product.dtype.name, "float64"))


def check_engine(engine, op):
    """Raise ValueError for an unknown ``engine`` and RuntimeError for ``"gpu"`` without a GPU."""
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    if engine == "gpu" and not gpu_available():
        raise RuntimeError(f"{op}: engine='gpu' but no CUDA GPU is usable (cupy is missing or sees no "
                           f"device); use engine='cpu'")


def _to_device(engine, *arrays):
    if engine == "cpu":
        return arrays, np.asarray
    import cupy
    return tuple(cupy.asarray(x) for x in arrays), cupy.asnumpy


def _outside(error, bound):
    """Fraction of the entries whose ``error`` exceeds ``bound`` (entries with inf bounds or NaN/inf
    errors excluded: the pattern check of :func:`_ratio` covers those)."""
    counted = np.isfinite(bound) & np.isfinite(error)
    return float((error > bound)[counted].mean()) if counted.any() else 0.0


def measure_gemm(a, b, scheme, engine="cpu", *, reference=None, native=None, probabilistic=True, product=None,
                 chunks=None):
    """Run ``splitprec.matmul(a, b, dtype=scheme)`` on ``engine`` and compare with the exact product.

    float32 operands for the float32-target schemes, float64 for ``ozaki2_int8x<N>``.
    ``reference`` (``exact_matmul(a, b)``) and ``native`` (:func:`native_error`: SGEMM, or DGEMM
    for float64, of contiguous copies of the operands) may be passed in when schemes share one input.
    ``probabilistic=False`` skips the probabilistic bound (``ratio_probabilistic`` stays NaN).
    ``product`` (a function giving ``a @ b`` on the host, e.g. entries of a dask product) and its
    k-chunks ``chunks`` replace the call (:func:`_check_sampled`).
    """
    check_engine(engine, "measure_gemm")
    exact = exact_matmul(a, b) if reference is None else reference
    if native is None:
        native = native_error(a, b, exact)
    if product is None:
        (da, db), back = _to_device(engine, a, b)
        product = lambda: back(splitprec.matmul(da, db, dtype=scheme))   # noqa: E731
    start = time.perf_counter()
    computed = product().astype(np.float64)
    seconds = time.perf_counter() - start
    bound = gemm_bound(a, b, scheme, engine=engine, chunks=chunks)
    pattern = _nonfinite_pattern(a, b)
    from_inputs = np.zeros(exact.shape, bool) if pattern is None else ~np.isfinite(pattern)
    with np.errstate(all="ignore"):
        d = splitprec.dtype(scheme)
        m = Measurement(d.name, "gemm", engine, _normwise(computed, exact, d.target),
                        _ratio(computed, exact, bound, from_inputs), native, seconds, output=computed)
        if probabilistic and chunks is None:       # the chunked product has a rigorous bound only
            likely = gemm_bound(a, b, scheme, engine=engine, kind="probabilistic", confidence=CONFIDENCE)
            m.ratio_probabilistic = _ratio(computed, exact, likely, from_inputs)
            m.outside_probabilistic = _outside(np.abs(computed - exact), likely)
    return m


def exact_spectrum(x, op="fft"):
    """:func:`exact_dft` of ``x``; for ``op="rfft"`` its first ``n // 2 + 1`` entries."""
    exact = exact_dft(x)
    return exact[:x.shape[-1] // 2 + 1] if op == "rfft" else exact


def single_precision_fft(x, op="fft", engine="cpu"):
    """The transform computed in single precision: ``scipy.fft`` (complex64 in, complex64
    arithmetic) on the CPU, cuFFT through ``cupy.fft`` for ``engine="gpu"``; complex128 result."""
    if engine == "gpu":
        import cupy
        transform = cupy.fft.rfft if op == "rfft" else cupy.fft.fft
        return cupy.asnumpy(transform(cupy.asarray(x))).astype(np.complex128)
    import scipy.fft
    transform = scipy.fft.rfft if op == "rfft" else scipy.fft.fft
    return transform(x.astype(np.float32 if op == "rfft" else np.complex64)).astype(np.complex128)


def measure_fft(x, scheme, engine="cpu", *, op="fft", reference=None, native=None, probabilistic=True):
    """Run ``splitprec.fft.fft(x, dtype=scheme)`` (complex64 ``x``), or ``rfft`` for ``op="rfft"``
    (float32 ``x``), and compare with :func:`exact_spectrum` and the bound (``fft_bound`` /
    ``rfft_bound``, both kinds unless ``probabilistic=False``); native is
    :func:`single_precision_fft` on the same engine."""
    check_engine(engine, "measure_fft")
    transform, bound_of = {"fft": (splitprec.fft.fft, fft_bound), "rfft": (splitprec.fft.rfft, rfft_bound)}[op]
    exact = exact_spectrum(x, op) if reference is None else reference
    if native is None:
        native = _normwise(single_precision_fft(x, op, engine), exact)
    (dx,), back = _to_device(engine, x)
    start = time.perf_counter()
    computed = back(transform(dx, dtype=scheme)).astype(np.complex128)
    seconds = time.perf_counter() - start
    err = np.linalg.norm(computed - exact)
    size = np.linalg.norm(exact)
    kinds = ("rigorous", "probabilistic") if probabilistic else ("rigorous",)
    ratios = [_fft_ratio(err, bound_of(x, scheme, engine, kind=kind, confidence=CONFIDENCE) * size)
              for kind in kinds] + [math.nan]
    return Measurement(splitprec.dtype(scheme).name, op, engine, _normwise(computed, exact),
                       ratios[0], native, seconds, output=computed, ratio_probabilistic=ratios[1],
                       outside_probabilistic=float(ratios[1] > 1))


def _fft_ratio(err, bound):
    return 0.0 if err == 0 else float(err / bound) if bound > 0 else np.inf


def ratio_text(ratio):
    """``ratio`` as a plain number to 3 significant digits, and a ratio near 1 to as many as show
    the first digit of its distance from 1: a bound nearly attained (``0.99999999999992``) or just
    exceeded (``1.0000001``) never prints as ``1``."""
    digits = 3
    if 0 < abs(ratio - 1) < 1:
        digits = min(17, max(digits, 1 - math.floor(math.log10(abs(ratio - 1)))))
    return f"{ratio:.{digits}g}"


@dataclass
class CheckResult:
    """The table returned by :func:`check`; ``str()`` and ``to_markdown()`` render it."""

    rows: list
    shape: tuple                   # (a.shape, b.shape) as given to check, vectors 1-D
    target: str = "float32"        # the operands' class: native is SGEMM ("float32") or DGEMM

    def to_markdown(self):
        head = (f"| scheme | normwise error | max error/bound | max error/prob. bound | vs native "
                f"{NATIVE[self.target]} | time (s) |\n|---|---|---|---|---|---|\n")
        body = "".join(f"| {r.scheme} | {r.normwise:.3g} | {ratio_text(r.ratio)} | "
                       f"{ratio_text(r.ratio_probabilistic)} | {_versus(r.normwise, r.native)} | "
                       f"{r.seconds:.3g} |\n" for r in self.rows)
        return head + body

    def __str__(self):
        table = [["scheme", "normwise", "err/bound", "err/prob.", f"vs {NATIVE[self.target]}", "time s"]]
        table += [[r.scheme, f"{r.normwise:.3g}", ratio_text(r.ratio), ratio_text(r.ratio_probabilistic),
                   _versus(r.normwise, r.native), f"{r.seconds:.3g}"] for r in self.rows]
        # Columns as wide as their longest cell, so a ratio printed to 14 digits shifts nothing.
        widths = [max(least, *(len(row[i]) for row in table)) for i, least in enumerate([8, 10, 10, 10, 10, 8])]
        lines = [" ".join([row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])])
                 for row in table]
        error = self.rows[0].native if self.rows else float("nan")
        lines.append(f"native {self.target} matmul normwise error: {error:.3g}; shape {self.shape}")
        return "\n".join(lines)


def _versus(error, native):
    if native == 0:
        return "exact" if error == 0 else "inf"
    return f"{error / native:.3g}x"


def scheme_names(schemes, op):
    """Canonical names of ``schemes``: one name (a string) or an iterable of names, each a scheme
    with a GEMM bound; TypeError / ValueError naming ``schemes`` otherwise."""
    accepted = ", ".join(map(repr, gemm_schemes()))
    items = [schemes] if isinstance(schemes, str) or hasattr(schemes, "target") else schemes
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"{op}: schemes must be a scheme name or an iterable of names, got "
                        f"{schemes!r}") from None
    if not items:
        raise ValueError(f"{op}: schemes is empty; expected one or more of {accepted}")
    names = []
    for item in items:
        try:
            names.append(splitprec.dtype(item).name)
        except (TypeError, ValueError):
            raise ValueError(f"{op}: unknown scheme {item!r} in schemes; expected one of {accepted}") from None
    return list(dict.fromkeys(names))               # a scheme named twice is run once


def _operands_target(a, b, names):
    """The target (``"float32"`` / ``"float64"``) that both operands and every scheme share."""
    found = [TARGET_OF_DTYPE.get(x.dtype.name) for x in (a, b)]
    for label, x, target in (("a", a, found[0]), ("b", b, found[1])):
        if target is None:
            raise TypeError(f"check: {label} has dtype {x.dtype}; expected float32 (or float16) "
                            f"operands for the float32-target schemes, float64 for the fp64 schemes")
    for name in names:
        wanted = splitprec.dtype(name).target
        for label, x, target in (("a", a, found[0]), ("b", b, found[1])):
            if target != wanted:
                listed = "; for float64: ".join(", ".join(gemm_schemes(t)) for t in ("float32", "float64"))
                raise TypeError(f"check: {label} has dtype {x.dtype}; scheme {name!r} takes {wanted} "
                                f"operands (schemes for float32 operands: {listed})")
    return found[0]


SAMPLE = 32     # rows of A and columns of B whose product entries a check of dask operands measures


def _is_dask(x):
    return type(x).__module__.split(".")[0] == "dask"


def _host(x):
    """A dask, cupy or SplitArray ``x`` computed and copied to a numpy array."""
    x = x.compute() if _is_dask(x) else x
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _check_sampled(a, b, names, engine):
    """:func:`check` of dask operands on the entries of a fixed-seed sample of rows of A and columns
    of B: only those rows and columns are fetched and multiplied exactly, never the whole product."""
    rng = np.random.default_rng(0)
    rows, cols = (np.sort(rng.choice(size, min(SAMPLE, size), replace=False)) for size in (a.shape[0], b.shape[1]))
    a_rows, b_cols = _host(a[rows, :]), _host(b[:, cols])
    names = gemm_schemes(TARGET_OF_DTYPE.get(a_rows.dtype.name, "float32")) if names is None else names
    target = _operands_target(a_rows, b_cols, names)
    exact = exact_matmul(a_rows, b_cols)
    native = native_error(a_rows, b_cols, exact)
    chunks = a.chunks[1] if _is_dask(a) else b.chunks[0]      # the k-chunks the product runs in
    measured = [measure_gemm(a_rows, b_cols, s, engine, reference=exact, native=native, chunks=chunks,
                             product=lambda s=s: _host(splitprec.matmul(a, b, dtype=s)[rows][:, cols]))
                for s in names]
    return CheckResult(measured, (a.shape, b.shape), target)


def check(a, b, schemes=None, *, engine="cpu"):
    """How accurate each scheme is on *your* matrices: a table of errors, bound ratios and times.

    Parameters
    ----------
    a, b : array_like, ndim >= 1 (a 1-D ``a`` is a row, a 1-D ``b`` a column)
        The operands, as they would be passed to ``splitprec.matmul`` and read as it reads them:
        float32 (float16, bfloat16) for the float32-target schemes, float64 for the fp64 schemes
        ``ozaki2_int8x<N>``; lists and integer arrays in the schemes' target, or float32 when no
        scheme is named, where every value is exact there. With a dask
        operand (both operands 2-D, as ``splitprec.matmul`` takes dask arrays), the entries of
        ``SAMPLE`` rows and columns (fixed seed) are measured against the bound of the product's
        k-chunks; their rows and columns alone are multiplied exactly.
    schemes : str or iterable of str, optional
        One scheme name, or several; by default every scheme with a bound for the operands' dtype
        (:func:`gemm_schemes`: ``gemm_schemes("float32")`` for float32 operands, the
        ``ozaki2_int8x12..18`` and ``ozaki2_int8_adaptive`` for float64).
    engine : {"cpu", "gpu"}, keyword-only

    Returns
    -------
    CheckResult
        ``.rows`` holds one :class:`Measurement` per scheme (its ``output`` of numpy.matmul's
        shape, vectors included), ``.shape`` the operands' shapes as given; ``str()`` is a plain table,
        ``.to_markdown()`` a markdown one, both with the error over the rigorous and over the
        probabilistic bound (confidence :data:`CONFIDENCE`, docs/bounds.md section 13), as plain
        numbers (:func:`ratio_text`). "vs native" is the scheme's normwise error over that of
        ``numpy.matmul`` of contiguous copies of the operands (:func:`native_error`): float32 BLAS
        ("vs native fp32"), or float64 BLAS, DGEMM ("vs native fp64"); below 1: more accurate than it.

    Raises
    ------
    TypeError
        Operands of a dtype the schemes do not take (float64 with a float32-target scheme,
        float32 with an fp64 scheme, or neither float32 nor float64), before anything is computed;
        ``schemes`` neither a string nor an iterable of names.
    ValueError
        An unknown scheme name in ``schemes``, an unknown ``engine``, a 0-d operand, a dask
        operand with an operand that is not 2-D, or shapes that do not multiply (inner dimensions
        that differ, batch dimensions that do not broadcast).
    RuntimeError
        ``engine="gpu"`` where no CUDA GPU is usable.

    Accuracy: the ratios use ``accuracy.gemm_bound``; a ratio above 1 is a bug (see docs/bounds.md).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.standard_normal((8, 32), dtype=np.float32); b = rng.standard_normal((32, 8), dtype=np.float32)
    >>> result = check(a, b, ["bf16x9", "tf32"])
    >>> [row.ratio <= 1 for row in result.rows]
    [True, True]
    >>> result = check(a.astype(np.float64), b.astype(np.float64), ["ozaki2_int8x14"])
    >>> result.rows[0].ratio <= 1 and result.target
    'float64'
    """
    check_engine(engine, "check")
    given = (np.shape(a), np.shape(b))
    names = None if schemes is None else scheme_names(schemes, "check")
    targets = {splitprec.dtype(name).target for name in names or ()}
    a, b = read_operands(a, b, "check", targets.pop() if len(targets) == 1 else "float32")   # as sp.matmul reads them
    a, b, row, column = as_matrices(a, b, "check")        # a vector is a row (a) or a column (b)
    for label, x in (("a", a), ("b", b)):
        if x.ndim < 2:
            raise ValueError(f"check: {label} has shape {x.shape}; expected a vector, a matrix or a "
                             "stack of matrices (ndim >= 1)")
    matmul_shapes(a, b, "check")
    if _is_dask(a) or _is_dask(b):
        if given[0] != a.shape or given[1] != b.shape or a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"check: dask operands must be 2-D, (m, k) and (k, n), as splitprec.matmul "
                             f"takes them; got a of shape {given[0]} and b of shape {given[1]}")
        return _check_sampled(a, b, names, engine)
    if names is None:
        names = gemm_schemes(TARGET_OF_DTYPE.get(a.dtype.name, "float32"))
    target = _operands_target(a, b, names)
    exact = exact_matmul(a, b)
    native = native_error(a, b, exact)
    rows = [measure_gemm(a, b, s, engine, reference=exact, native=native) for s in names]
    for m in rows:                                         # numpy's result shape, as sp.matmul gives
        m.output = vector_result(m.output, row, column)
    return CheckResult(rows, given, target)
