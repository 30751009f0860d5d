"""Test inputs: seedable generators and a named registry of GEMM and FFT cases.

Generators take a ``numpy.random.Generator`` and return float32 arrays (complex64 signals for
the FFT); those with a ``dtype`` argument make float64 operands for the fp64 schemes
(``ozaki2_int8x<N>``) with ``dtype=numpy.float64``. A :class:`Case` binds a generator to its
parameters under a name such as ``"span_phi4_k256"`` and names the target of the schemes it is
for (``case.target``: ``"float32"``, or ``"float64"`` for the ``fp64_*`` GEMM cases);
``registry(level, op, target)`` lists the cases of a suite level:

- ``"quick"``: a few seconds on a 2-core CPU (``splitprec report --quick``),
- ``"ci"``: what the test suite iterates (k up to 4096),
- ``"full"``: the default report (adds k up to 65536 and larger shapes).

Families: N(0,1) and U(0,1) entries, controlled exponent span (GEMMul8's ``phi``: entries
``(U(0,1) - 0.5) * exp(phi * N(0,1))``, Uchino, Ozaki and Imamura), ill-conditioned dot products
of prescribed condition number (Ogita, Rump and Oishi 2005, GenDot), values near the float32
maximum and minimum normal, subnormals, zeros, NaN/Inf, rectangular and batched shapes; FFT
signals: random, pure tones, impulses, wide dynamic range. float64 GEMM cases (``fp64_*``): the
same families at float64's range edges, plus exponent spans across rows and columns
(:func:`scaled_rows`) and within them (:func:`scaled_entries`), which the Ozaki-II bound depends on,
GEMMul8's spans at its k = 600, results beyond float64's range, partial sums past it with finite
results, and spans whose products reach the largest and the subnormal results.
"""
from fractions import Fraction
from dataclasses import dataclass, field
import math

import numpy as np

FP32 = np.finfo(np.float32)
FP64 = np.finfo(np.float64)
LEVELS = ("quick", "ci", "full")
OPS = ("gemm", "fft", "rfft")


def normal(rng, shape, dtype=np.float32):
    """N(0, 1) entries."""
    return rng.standard_normal(shape).astype(dtype)


def uniform(rng, shape, dtype=np.float32):
    """U(0, 1) entries (all positive: no cancellation)."""
    return rng.random(shape).astype(dtype)


def exponent_span(rng, shape, phi, dtype=np.float32):
    """``(U(0,1) - 0.5) * exp(phi * N(0,1))``: the exponent span grows with ``phi`` (GEMMul8)."""
    with np.errstate(over="ignore"):
        x = (rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape))
    top = np.finfo(dtype).max / 4
    return np.clip(x, -top, top).astype(dtype)


def ill_conditioned_dot(rng, k, cond, dtype=np.float32):
    """Vectors ``x, y`` of length ``k`` whose dot product has condition number ~``cond``.

    Ogita, Rump and Oishi (SIAM J. Sci. Comput. 26(6), 2005), Algorithm 6.1: the first half has
    random exponents up to ``log2(cond)/2``; each later ``y_i`` cancels the exact partial sum
    (kept as a fraction, rounded once).
    """
    if k < 2:
        return normal(rng, k, dtype), normal(rng, k, dtype)
    half, top = k // 2, max(math.log2(cond) / 2, 1.0)
    exps = np.round(rng.random(half) * top)
    exps[0], exps[-1] = round(top / 2) + 1, 0
    x = np.empty(k, dtype)
    y = np.empty(k, dtype)
    x[:half] = ((2 * rng.random(half) - 1) * 2.0 ** exps).astype(dtype)
    y[:half] = ((2 * rng.random(half) - 1) * 2.0 ** exps).astype(dtype)
    partial = sum(Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x[:half], y[:half]))
    for i, e in enumerate(np.round(np.linspace(top, 0, k - half)), start=half):
        x[i] = dtype((2 * rng.random() - 1) * 2.0 ** e) or dtype(1)
        y[i] = dtype(((2 * rng.random() - 1) * 2.0 ** e - float(partial)) / np.float64(x[i]))
        partial += Fraction(float(x[i])) * Fraction(float(y[i]))
    order = rng.permutation(k)
    return x[order], y[order]


def cancellation(rng, m, k, n, cond, dtype=np.float32):
    """A, B whose diagonal products ``A[i] @ B[:, i]`` have condition number ~``cond``."""
    a, b = normal(rng, (m, k), dtype), normal(rng, (k, n), dtype)
    for i in range(min(m, n)):
        a[i], b[:, i] = ill_conditioned_dot(rng, k, cond, dtype)
    return a, b


def near_max(rng, shape, k, dtype=np.float32):
    """Entries in the top binade of float32 (above bf16's and tf32's largest finite values), or of
    float64; the second operand's entries below ``1/(2k)`` keep the product finite."""
    x = np.finfo(dtype).max * (1 - rng.random(shape) * 2.0 ** -9) * rng.choice([-1, 1], shape)
    return x.astype(dtype), (rng.random((shape[-1], shape[-2])) / (2 * k)).astype(dtype)


def near_min_normal(rng, shape, dtype=np.float32):
    """Entries within a few binades of the smallest normal number."""
    x = np.finfo(dtype).tiny * np.exp2(rng.uniform(-3, 8, shape)) * rng.choice([-1, 1], shape)
    return x.astype(dtype)


def subnormal(rng, shape, dtype=np.float32):
    """Subnormal entries (integers times 2**-149 in float32, 2**-1074 in float64)."""
    info = np.finfo(dtype)
    x = rng.integers(-(2 ** info.nmant) + 1, 2 ** info.nmant, shape) * float(info.smallest_subnormal)
    return x.astype(dtype)


def with_nonfinite(rng, x):
    """``x`` with a few NaN, +inf and -inf entries."""
    x = x.copy()
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, size=min(3, flat.size), replace=False)
    flat[spots] = np.float32([np.nan, np.inf, -np.inf])[: spots.size]
    return x


def row_span(rng, shape, bits, dtype=np.float32):
    """N(0,1) rows whose entries after the first are scaled by ``2**-bits`` (one large element per
    row): the exponent-span edge of pow2-scaled schemes (fp16 subnormal lower parts; the Ozaki-II
    schemes hold the small entries only to ``2**-Q`` of the row's norm)."""
    x = normal(rng, shape, dtype)
    x[..., 1:] *= dtype(2.0 ** -bits)
    return x


def scaled_rows(rng, shape, bits, axis=-1, dtype=np.float64):
    """N(0,1) slices along ``axis`` (rows of A: -1, columns of B: -2), each scaled by ``2**e`` with
    ``e`` uniform in ``[-bits, bits]``: an exponent span across rows or columns, none within."""
    scale_shape = list(shape)
    scale_shape[axis] = 1
    return np.ldexp(normal(rng, shape, dtype), rng.integers(-bits, bits + 1, scale_shape))


def scaled_entries(rng, shape, bits, dtype=np.float64):
    """N(0,1) entries each scaled by ``2**e``, ``e`` uniform in ``[-bits, bits]``: an exponent span
    within every row and column."""
    return np.ldexp(normal(rng, shape, dtype), rng.integers(-bits, bits + 1, shape))


def tone(n, freq):
    """``exp(2j*pi*freq*t/n)``, rounded to complex64."""
    t = np.arange(n)
    return np.exp(2j * np.pi * freq * t / n).astype(np.complex64)


def impulse(n, at=0):
    """A unit impulse at ``at``."""
    x = np.zeros(n, np.complex64)
    x[at] = 1
    return x


def complex_normal(rng, n):
    """Complex N(0,1) signal."""
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)


def wide_range(rng, n, phi):
    """Complex signal with exponent span ``phi`` (see :func:`exponent_span`)."""
    return (exponent_span(rng, n, phi) + 1j * exponent_span(rng, n, phi)).astype(np.complex64)


@dataclass(frozen=True)
class Case:
    """A named input: ``case.inputs(seed)`` returns ``(a, b)`` (gemm) or ``(x,)`` (fft, rfft)."""

    name: str
    op: str
    make: object = field(repr=False)      # make(rng) -> tuple of arrays
    level: str = "ci"                     # smallest suite level that includes the case
    params: dict = field(default_factory=dict, compare=False)
    target: str = "float32"               # the operands' dtype: schemes of this target run it

    def inputs(self, seed=0):
        return self.make(np.random.default_rng(seed))


def _pair(gen_a, gen_b=None):
    return lambda m, k, n: (lambda rng: (gen_a(rng, (m, k)), (gen_b or gen_a)(rng, (k, n))))


def _f64(gen, **params):
    """``gen`` making float64 arrays: ``(rng, shape) -> gen(rng, shape, **params, dtype=float64)``."""
    return lambda rng, shape: gen(rng, shape, **params, dtype=np.float64)


def _gemm_cases():
    out = []
    add = lambda name, make, level, **params: out.append(Case(name, "gemm", make, level, params))
    for k in (1, 16, 256, 4096, 65536):
        level = "quick" if k <= 256 else "ci" if k <= 4096 else "full"
        size = 32 if k <= 4096 else 8
        add(f"normal_k{k}", _pair(normal)(size, k, size), level, k=k)
        add(f"uniform_k{k}", _pair(uniform)(size, k, size), level if k < 4096 else "full", k=k)
    for phi in (0.5, 1, 2, 4, 8, 16):
        add(f"span_phi{phi:g}_k256", _pair(lambda r, s, p=phi: exponent_span(r, s, p))(16, 256, 16),
            "quick" if phi in (1, 4) else "ci", k=256, phi=phi)
    for cond in (1e4, 1e8, 1e16, 1e30):
        add(f"cancel_c{cond:.0e}_k64", lambda r, c=cond: cancellation(r, 4, 64, 4, c),
            "quick" if cond == 1e8 else "ci", k=64, cond=cond)
    add("near_max_k16", lambda r: near_max(r, (8, 16), 16), "quick", k=16)
    add("near_min_normal_k64", _pair(near_min_normal, normal)(8, 64, 8), "quick", k=64)
    add("tiny_times_tiny_k64", _pair(near_min_normal)(8, 64, 8), "ci", k=64)
    add("subnormal_k64", _pair(subnormal, normal)(8, 64, 8), "quick", k=64)
    add("zeros_k16", lambda r: (np.zeros((4, 16), np.float32), normal(r, (16, 4))), "ci", k=16)
    add("nonfinite_k16", lambda r: (with_nonfinite(r, normal(r, (6, 16))), normal(r, (16, 6))),
        "quick", k=16)
    for bits in (20, 40, 60):
        add(f"row_span_{bits}bits_k64", _pair(lambda r, s, b=bits: row_span(r, s, b))(8, 64, 8),
            "quick" if bits == 40 else "ci", k=64, bits=bits)
    add("rectangular_k33", _pair(normal)(17, 33, 5), "quick", k=33)
    add("batched_k24", lambda r: (normal(r, (3, 5, 24)), normal(r, (3, 24, 7))), "quick", k=24)
    add("broadcast_k16", lambda r: (normal(r, (2, 1, 4, 16)), normal(r, (3, 16, 5))), "ci", k=16)
    add("square_k512", _pair(normal)(128, 512, 128), "full", k=512)
    return out


def _fft_cases():
    out = []
    add = lambda name, make, level, **params: out.append(Case(name, "fft", make, level, params))
    for n in (8, 60, 64, 256, 1024):
        level = "quick" if n in (64,) else "ci" if n <= 256 else "full"
        add(f"fft_normal_n{n}", lambda r, n=n: (complex_normal(r, n),), level, n=n)
    add("fft_tone_n64", lambda r: (tone(64, 5),), "quick", n=64)
    add("fft_impulse_n64", lambda r: (impulse(64, 3),), "ci", n=64)
    add("fft_wide_range_n128", lambda r: (wide_range(r, 128, 8),), "ci", n=128)
    add("fft_prime_n97", lambda r: (complex_normal(r, 97),), "ci", n=97)
    add("fft_radix_9_7_n63", lambda r: (complex_normal(r, 63),), "ci", n=63)
    return out


def _rfft_cases():
    """Real signals for ``rfft``: even lengths run the half-length packed transform, odd ones not."""
    out = []
    add = lambda name, make, level, **params: out.append(Case(name, "rfft", make, level, params))
    for n in (8, 64, 1000, 1024):
        level = "quick" if n == 64 else "ci" if n <= 1000 else "full"
        add(f"rfft_normal_n{n}", lambda r, n=n: (normal(r, n),), level, n=n)
    add("rfft_impulse_n64", lambda r: (impulse(64, 3).real.copy(),), "ci", n=64)
    add("rfft_wide_range_n128", lambda r: (exponent_span(r, 128, 8),), "quick", n=128)
    add("rfft_odd_n97", lambda r: (normal(r, 97),), "ci", n=97)
    return out


def _fp64_cases():
    """float64 GEMM cases for the ``ozaki2_int8x<N>`` schemes, named ``fp64_*``."""
    out = []
    add = lambda name, make, level, **params: out.append(
        Case(f"fp64_{name}", "gemm", make, level, params, "float64"))
    normal64 = _f64(normal)
    for k in (1, 16, 256, 4096, 65536):
        level = "quick" if k <= 256 else "ci" if k <= 4096 else "full"
        size = 32 if k <= 4096 else 8
        add(f"normal_k{k}", _pair(normal64)(size, k, size), level, k=k)
        add(f"uniform_k{k}", _pair(_f64(uniform))(size, k, size), level, k=k)
    for phi in (0.5, 1, 2, 4, 8, 16, 32, 64):
        add(f"span_phi{phi:g}_k256", _pair(_f64(exponent_span, phi=phi))(16, 256, 16),
            "quick" if phi in (1, 4, 16, 64) else "ci", k=256, phi=phi)
    for phi in (4, 16, 32, 64):               # GEMMul8's generator at its k = 600
        add(f"span_phi{phi:g}_k600", _pair(_f64(exponent_span, phi=phi))(24, 600, 24),
            "quick" if phi == 16 else "ci", k=600, phi=phi)
    for bits in (60, 300, 500):
        add(f"scaled_rows_{bits}bits_k64", lambda r, b=bits: (scaled_rows(r, (8, 64), b, -1),
                                                             scaled_rows(r, (64, 8), b, -2)),
            "quick" if bits == 300 else "ci", k=64, bits=bits)
    for bits in (20, 60, 200):
        add(f"scaled_entries_{bits}bits_k64", _pair(_f64(scaled_entries, bits=bits))(8, 64, 8),
            "quick" if bits == 60 else "ci", k=64, bits=bits)
    for bits in (30, 60, 120):
        add(f"row_span_{bits}bits_k64", _pair(_f64(row_span, bits=bits), normal64)(8, 64, 8),
            "quick" if bits == 60 else "ci", k=64, bits=bits)
    for cond in (1e8, 1e16, 1e32, 1e60):
        add(f"cancel_c{cond:.0e}_k64", lambda r, c=cond: cancellation(r, 4, 64, 4, c, np.float64),
            "quick" if cond == 1e16 else "ci", k=64, cond=cond)
    _fp64_edge_cases(add, normal64)
    return out


def _fp64_edge_cases(add, normal64):
    """Range edges, special values and shapes of the float64 cases."""
    add("near_max_k16", lambda r: near_max(r, (8, 16), 16, np.float64), "quick", k=16)
    add("huge_times_tiny_k16", lambda r: (np.ldexp(normal64(r, (8, 16)), 1000),
                                          np.ldexp(normal64(r, (16, 8)), -1060)), "quick", k=16)
    add("near_min_normal_k64", _pair(_f64(near_min_normal), normal64)(8, 64, 8), "quick", k=64)
    add("tiny_times_tiny_k64", _pair(_f64(near_min_normal))(8, 64, 8), "ci", k=64)
    add("subnormal_k64", _pair(_f64(subnormal), normal64)(8, 64, 8), "quick", k=64)
    add("subnormal_results_k16", lambda r: (np.ldexp(normal64(r, (8, 16)), -560),
                                            np.ldexp(normal64(r, (16, 8)), -500)), "quick", k=16)
    add("beyond_range_k2", lambda r: (np.ldexp(normal64(r, (8, 2)), [1000, 500]),
                                      np.ldexp(normal64(r, (2, 8)), [[-1000], [600]])), "quick", k=2)
    add("partial_overflow_k3", lambda r: (np.float64([1, 1, -1]) * FP64.max * r.uniform(0.5, 0.7, (6, 3)),
                                          r.uniform(0.9, 1, (3, 5))), "quick", k=3)
    add("span_near_max_k64", lambda r: (np.ldexp(exponent_span(r, (8, 64), 8, np.float64), 600),
                                        np.ldexp(exponent_span(r, (64, 8), 8, np.float64), 380)), "quick", k=64)
    add("span_near_min_k64", lambda r: (np.ldexp(exponent_span(r, (8, 64), 8, np.float64), -600),
                                        np.ldexp(exponent_span(r, (64, 8), 8, np.float64), -470)), "quick", k=64)
    add("zeros_k16", lambda r: (np.zeros((4, 16)), normal64(r, (16, 4))), "ci", k=16)
    add("nonfinite_k16", lambda r: (with_nonfinite(r, normal64(r, (6, 16))), normal64(r, (16, 6))),
        "quick", k=16)
    add("rectangular_k33", _pair(normal64)(17, 33, 5), "quick", k=33)
    add("batched_k24", lambda r: (normal64(r, (3, 5, 24)), normal64(r, (3, 24, 7))), "quick", k=24)
    add("broadcast_k16", lambda r: (normal64(r, (2, 1, 4, 16)), normal64(r, (3, 16, 5))), "ci", k=16)
    add("square_k512", _pair(normal64)(128, 512, 128), "full", k=512)


_REGISTRY = {c.name: c for c in _gemm_cases() + _fp64_cases() + _fft_cases() + _rfft_cases()}
TARGETS = ("float32", "float64")


def registry(level="ci", op=None, target=None):
    """Cases of suite ``level`` (``"quick"``, ``"ci"`` or ``"full"``), optionally of one ``op`` and
    one ``target`` (``"float32"``: float32 operands / complex64 signals; ``"float64"``: the
    ``fp64_*`` GEMM cases of the ``ozaki2_int8x<N>`` schemes).

    Raises
    ------
    ValueError
        Unknown level, op or target.
    """
    for kind, value, accepted in (("level", level, LEVELS), ("op", op, OPS), ("target", target, TARGETS)):
        if (value is not None or kind == "level") and value not in accepted:
            raise ValueError(f"registry: unknown {kind} {value!r}; expected one of "
                             f"{', '.join(map(repr, accepted))}")
    depth = LEVELS.index(level)
    return [c for c in _REGISTRY.values() if LEVELS.index(c.level) <= depth
            and (op is None or c.op == op) and (target is None or c.target == target)]


def get(name):
    """The registered :class:`Case` called ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown case {name!r}; expected one of "
                         f"{', '.join(map(repr, sorted(_REGISTRY)))}") from None
