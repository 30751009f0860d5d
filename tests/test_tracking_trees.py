"""Random expression trees of tracked arrays against exact evaluation: the exact result of every
entry of every tree lies within value +- error_bound.

Hypothesis draws TREES_IN_CI trees (depth <= 6) of the tracked operations (elementwise, where,
sums and means over the last axis, products by a matrix, a reversed axis) on float32 and float64
inputs spanning float32's binades (some with a caller's ``error=`` and the exact value at an end or
inside of that interval), shapes up to 64 entries, and Python numbers as second operands (any
double, NaN and inf included). Each node is evaluated exactly:
rational operations in fractions.Fraction, sqrt/exp/log/sin/cos in a local mpmath context at
3000 bits. An entry whose exact value is undefined (a division by 0, log of a non-positive
number, sqrt of a negative one) must have an infinite bound; entries below a node whose bound is
infinite are not evaluated (nothing is claimed there).
"""
import math
import os
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import splitprec as sp

TREES_IN_CI = int(os.environ.get("TRACKED_TREES", 2000))     # TRACKED_TREES=200 for a quick local run
MAX_DEPTH = 6
SCHEMES = ("bf16x9", "bf16x6", "tf32x3", "bf16x3", "fp16x3", "bf16")
CTX = mpmath.MPContext()
CTX.prec = 3000
UNKNOWN = float("nan")           # an entry not evaluated: below an infinite bound
UNARY = ("negative", "absolute", "sqrt", "exp", "log", "sin", "cos", "sum", "mean", "reverse")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "where", "matmul")


class Undefined(Exception):
    """The exact value of an entry does not exist."""


def _mp(x):
    return CTX.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else CTX.mpf(x)


def _transcendental(name):
    function = {"sqrt": CTX.sqrt, "exp": CTX.exp, "log": CTX.log, "sin": CTX.sin, "cos": CTX.cos}[name]

    def exact(x):
        x = _mp(x)
        if (name == "sqrt" and x < 0) or (name == "log" and x <= 0):
            raise Undefined(name)
        return function(x)
    return exact


def _divide(a, b):
    if b == 0:
        raise Undefined("divide")
    return a / b if isinstance(a, Fraction) and isinstance(b, Fraction) else _mp(a) / _mp(b)


def _rational(op):
    def exact(a, b):
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return op(a, b)
        return op(_mp(a), _mp(b))
    return exact


EXACT = {"negative": lambda a: -a, "absolute": abs, "add": _rational(lambda a, b: a + b),
         "subtract": _rational(lambda a, b: a - b), "multiply": _rational(lambda a, b: a * b),
         "divide": _divide, "maximum": _rational(max), "minimum": _rational(min),
         **{name: _transcendental(name) for name in ("sqrt", "exp", "log", "sin", "cos")}}


def _exact_input(x):
    return np.frompyfunc(Fraction, 1, 1)(np.asarray(x, dtype=np.float64))


def _elementwise(name, bound, *children):
    """Exact ``name`` of the object arrays ``children`` where ``bound`` is finite; UNKNOWN elsewhere
    and below UNKNOWN operands; an undefined entry with a finite bound fails."""
    children = np.broadcast_arrays(*children)
    out = np.empty(bound.shape, object)
    for index in np.ndindex(bound.shape):
        args = [c[index] for c in children]
        if not math.isfinite(bound[index]) or any(isinstance(a, float) for a in args):
            out[index] = UNKNOWN
            continue
        try:
            out[index] = EXACT[name](*args)
        except Undefined:
            pytest.fail(f"{name} of {args} is undefined, but the tracked bound is {bound[index]!r}")
    return out


def _known(exact, bound):
    """``exact`` with entries under an infinite bound, or over UNKNOWN ones, made UNKNOWN."""
    unknown = np.frompyfunc(lambda e: isinstance(e, float), 1, 1)(exact).astype(bool) | ~np.isfinite(bound)
    return np.where(unknown, UNKNOWN, exact)


def _reduce(exact, bound, mean):
    n = exact.shape[-1]
    total = np.empty(exact.shape[:-1] + (1,), object)
    for index in np.ndindex(exact.shape[:-1]):
        row = list(exact[index])
        if any(isinstance(e, float) for e in row):
            total[index + (0,)] = UNKNOWN
            continue
        s = sum(row, Fraction(0)) if all(isinstance(x, Fraction) for x in row) else CTX.fsum([_mp(x) for x in row])
        total[index + (0,)] = s / n if mean else s
    return _known(total, bound)


def _evaluate(node, leaves, scalars, matrices, masks, scheme):
    """``(TrackedArray, exact object array)`` of ``node``."""
    kind = node[0]
    if kind == "leaf":
        tracked, exact = leaves[node[1]]
        return tracked, exact
    if kind == "scalar":
        number = scalars[node[1]]
        return number, np.array(Fraction(number) if math.isfinite(number) else UNKNOWN, object)
    name, children = node[1], [_evaluate(c, leaves, scalars, matrices, masks, scheme) for c in node[2:]]
    (a, exact_a) = children[0]
    if name == "sum" or name == "mean":
        result = getattr(a, name)(axis=-1, keepdims=True)
        return result, _reduce(exact_a, result.error_bound, name == "mean")
    if name == "reverse":
        return a[..., ::-1], exact_a[..., ::-1]
    if name == "matmul":
        matrix, exact_m = matrices[node[3][1] % len(matrices)]
        shape = a.shape[:-1] + matrix.shape[:1]                 # a sum's (rows, 1) broadcasts first
        a, exact_a = np.broadcast_to(a, shape), np.broadcast_to(exact_a, shape)
        result = sp.matmul(a, matrix, dtype=scheme)
        exact = np.matmul(np.where(np.frompyfunc(lambda e: isinstance(e, float), 1, 1)(exact_a).astype(bool),
                                   Fraction(0), exact_a), exact_m)
        rows_known = ~np.frompyfunc(lambda e: isinstance(e, float), 1, 1)(exact_a).astype(bool).any(-1, keepdims=True)
        return result, _known(np.where(rows_known, exact, UNKNOWN), result.error_bound)
    if name == "where":
        mask = masks[node[3][1] % len(masks)]
        b, exact_b = children[1]
        return np.where(mask, a, b), np.where(mask, exact_a, exact_b)
    with np.errstate(all="ignore"):
        result = getattr(np, name)(*[c[0] for c in children])
    return result, _elementwise(name, result.error_bound, *[c[1] for c in children])


@st.composite
def trees(draw, depth=MAX_DEPTH):
    if depth == 0 or (depth < MAX_DEPTH and draw(st.integers(0, 3)) == 0):     # the root is an operation
        return ("leaf", draw(st.integers(0, 3)))
    if draw(st.booleans()):
        return ("op", draw(st.sampled_from(UNARY)), draw(trees(depth=depth - 1)))
    name = draw(st.sampled_from(BINARY))
    if name in ("matmul", "where"):
        return ("op", name, draw(trees(depth=depth - 1)), ("leaf", draw(st.integers(0, 1))))
    if draw(st.integers(0, 4)) == 0:                                          # a Python number
        return ("op", name, draw(trees(depth=depth - 1)), ("scalar", draw(st.integers(0, 1))))
    return ("op", name, draw(trees(depth=depth - 1)), draw(trees(depth=depth - 1)))


def _binades(draw, shape, dtype):
    """float data over float32's binades: hypothesis' floats, and normal data scaled by 2**e."""
    if draw(st.booleans()):
        return draw(hnp.arrays(dtype, shape, elements=st.floats(
            width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)))
    seed, span = draw(st.integers(0, 2 ** 32 - 1)), draw(st.integers(0, 120))
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-span, span + 1, shape)).astype(dtype)


def _leaf(draw, shape, scheme):
    """A tracked input and its exact value: float32 data (exact), float64 data (rounded), or float32
    data with ``error=`` and the exact value at an end, the middle or inside of that interval."""
    kind = draw(st.sampled_from(["float32", "float64", "interval"]))
    data = _binades(draw, shape, np.float64 if kind == "float64" else np.float32)
    if kind != "interval":
        return sp.asarray(data, dtype=scheme, track_error=True), _exact_input(data)
    error = np.abs(data.astype(np.float64)) * 2.0 ** -draw(st.integers(1, 40)) + draw(st.sampled_from([0.0, 2.0 ** -140]))
    where = Fraction(draw(st.sampled_from([-1, 1, 0, Fraction(1, 3), Fraction(-7, 8)])))
    exact = _exact_input(data) + np.frompyfunc(lambda e: Fraction(e) * where, 1, 1)(error)
    return sp.asarray(data, dtype=scheme, track_error=True, error=error), exact


@st.composite
def problems(draw):
    rows, cols = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    shape = (rows, cols)
    scheme = draw(st.sampled_from(SCHEMES))
    leaves = [_leaf(draw, shape, scheme) for _ in range(4)]
    matrices = []
    for _ in range(2):
        data = _binades(draw, (cols, cols), np.float32)
        matrices.append((sp.asarray(data, dtype=scheme, track_error=True), _exact_input(data)))
    masks = [draw(hnp.arrays(np.bool_, shape)) for _ in range(2)]
    scalars = [draw(st.one_of(st.floats(width=32), st.floats(), st.sampled_from([0.1, -750.0, 700.0, 1e-40])))
               for _ in range(2)]
    return draw(trees()), leaves, scalars, matrices, masks, scheme


def _violations(tracked, exact):
    value, bound = tracked.value.astype(np.float64), tracked.error_bound
    bad = []
    for index in np.ndindex(value.shape):
        e, b, v = exact[index], bound[index], value[index]
        if not math.isfinite(b):
            continue
        if not math.isfinite(v) or not isinstance(e, float) and abs(_mp(e) - CTX.mpf(v)) > CTX.mpf(b):
            bad.append((index, e, v, b))                  # a NaN or inf value needs an infinite bound
    return bad


@settings(max_examples=TREES_IN_CI, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.data_too_large])
@given(problems())
def test_tracked_tree_exact_result_within_bound(problem):
    tree, leaves, scalars, matrices, masks, scheme = problem
    tracked, exact = _evaluate(tree, leaves, scalars, matrices, masks, scheme)
    assert _violations(tracked, exact) == []
