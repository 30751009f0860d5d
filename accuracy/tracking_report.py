"""Tracked error bounds in the report: their tightness on chains of ten well-conditioned operations.

:func:`chain_tightness` runs the chain ``CHAIN`` (two products by a positive matrix and eight
elementwise steps, values kept in ``[1, 4]``) on tracked arrays and on float128 (numpy's longdouble,
64-bit significand) copies of the same inputs, and returns, per step, the median over entries of
``bound / actual error`` (entries with a zero actual error left out). :func:`section` formats both
modes for ``splitprec report``, on bf16x9 or on the float32-target schemes of its ``--schemes``
(docs/tracking.md, "Tightness").
"""
import numpy as np

import splitprec

ELEMENTWISE = (("multiply", 1.5), ("add", 0.25), ("sqrt", None), ("exp", None), ("divide", 3.0),
               ("log", None), ("multiply", 1.25), ("add", 1.0), ("sqrt", None), ("exp", None))
WITH_PRODUCTS = (("matmul", None), ("multiply", 1.5), ("add", 0.25), ("sqrt", None), ("exp", None),
                 ("divide", 3.0), ("log", None), ("matmul", None), ("add", 1.0), ("sqrt", None))
CHAINS = {"elementwise": ELEMENTWISE, "with products": WITH_PRODUCTS}


def _step(x, name, constant, matrix, xp):
    if name == "matmul":
        return x @ matrix
    if constant is None:
        return getattr(xp, name)(x)
    return getattr(xp, name)(x, constant)


def chain_tightness(chain, track_error=True, dtype="bf16x9", shape=(16, 64), seed=0):
    """Per step of ``chain``: ``(step name, median of bound / actual error)`` (module docstring)."""
    rng = np.random.default_rng(seed)
    x32 = rng.uniform(1, 2, shape).astype(np.float32)
    m32 = (rng.uniform(0, 2, (shape[1], shape[1])) / shape[1]).astype(np.float32)
    x = splitprec.asarray(x32, dtype=dtype, track_error=track_error)
    matrix = splitprec.asarray(m32, dtype=dtype, track_error=track_error)
    exact, exact_matrix = x32.astype(np.longdouble), m32.astype(np.longdouble)
    rows = []
    for name, constant in chain:
        x = _step(x, name, constant, matrix, np)
        exact = _step(exact, name, constant, exact_matrix, np)
        actual = np.abs(x.value.astype(np.longdouble) - exact)
        seen = actual > 0
        rows.append((name, float(np.median(x.error_bound[seen] / actual[seen]))))
    return rows


def section(schemes=None):
    """The report's text: per float32-target scheme of ``schemes`` (those tracked arrays hold; None:
    bf16x9) and per step, the median bound / actual error, rigorous and probabilistic; one line
    saying the section is left out when ``schemes`` holds none."""
    if schemes is None:
        schemes = ["bf16x9"]
    tracked = [name for name in dict.fromkeys(schemes) if splitprec.dtype(name).target == "float32"]
    if not tracked:
        return (f"Tracked error bounds: left out; tracked arrays hold float32-target schemes and none "
                f"was asked for ({', '.join(schemes)})")
    return "\n\n".join(_scheme_section(name) for name in tracked)


def _scheme_section(dtype):
    lines = [f"Tracked error bounds ({dtype}, 16 x 64 values, docs/tracking.md): median over entries "
             "of bound / actual error after each step of two chains of ten operations"]
    for title, chain in CHAINS.items():
        rigorous = chain_tightness(chain, True, dtype)
        probabilistic = chain_tightness(chain, "probabilistic", dtype)
        lines += [f"  {title}:", f"    {'step':<10} {'rigorous':>10} {'probabilistic':>14}"]
        lines += [f"    {i + 1:>2} {name:<7} {r:10.3g} {p:14.3g}"
                  for i, ((name, r), (_, p)) in enumerate(zip(rigorous, probabilistic))]
    return "\n".join(lines)
