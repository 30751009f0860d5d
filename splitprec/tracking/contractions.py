"""Matrix products of tracked arrays: ``@``, ``np.matmul``, ``splitprec.matmul`` and ``np.einsum``.

The value is the SplitArray product (:mod:`splitprec.array.contractions`, the operands' cached
parts). For computed operands ``A^, B^`` within ``E_A, E_B`` of the exact ``A, B`` (docs/tracking.md,
"Matrix products"),

    ``|C^ - A B| <= |C^ - A^ B^| + E_A (|B^| + E_B) + |A^| E_B``,

all of it bounded by :func:`splitprec.accuracy.gemm_envelope` with the operands' errors (the first
term never below ``accuracy.gemm_bound``, the probabilistic one in that mode; the others folded
into its products, ``|A^| (w |B^| + E_B) + E_A (|B^| + E_B)``, float64, rounded up).
``einsum`` runs its pairwise contractions through the same rule (operands with a label repeated
within one operand, or a label summed in one operand only, are refused: take the diagonal or the
sum first).
"""
import numpy as np

from .._backend import namespace
from ..array.contractions import einsum_labels, label_groups, matmul as split_matmul
from ..array.core import SplitArray, promote
from ..linalg import _scheme as linalg_scheme
from .core import UFUNCS, TrackedArray, implements
from .inputs import operand
from .rounding import magnitude, rounded_up, unknown_where_not_finite


def _magnitude(x):
    """``|x|`` in float64 with non-finite entries as 0, kept with ``x`` (it is immutable)."""
    if "magnitude" not in x._cache:
        xp = namespace(x._value)
        x._cache["magnitude"] = xp.where(xp.isfinite(x._value), magnitude(x._value, xp), 0.0)
    return x._cache["magnitude"]


def _as_matrices(x, side):
    """``(value, |value|, bound)`` of ``x`` with a 1-D operand made a row (a) or column (b)."""
    promote_1d = (lambda v: v[None, :]) if side == "a" else (lambda v: v[:, None])
    arrays = (x._value, _magnitude(x), x._bound)
    return tuple(promote_1d(v) for v in arrays) if x.ndim == 1 else arrays


def matmul(a, b, *, out=None, dtype=None, precision=None, op="matmul"):
    """``a @ b`` of tracked (or plain) operands, a TrackedArray (module docstring)."""
    if out is not None:
        raise TypeError(f"{op}: out is not supported for tracked arrays; expected out=None")
    like = a if isinstance(a, TrackedArray) else b
    a, b = operand(a, op, "a", like), operand(b, op, "b", like)
    if a.is_complex or b.is_complex:
        raise TypeError(f"{op}: tracked complex values are not supported; expected real TrackedArrays")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"{op}: a scalar operand (ndim 0); expected arrays with ndim >= 1 (use * for scalars)")
    xp = namespace(a._value, b._value)
    if dtype is None and precision is None:
        d = promote(a._dtype, b._dtype)
    else:
        d = linalg_scheme(dtype, precision, op, on_gpu=xp is not np)
    product = split_matmul(a._split(), b._split(), dtype=d, op=op)
    value = product._value if isinstance(product, SplitArray) else xp.asarray(product, dtype=np.float32)
    (va, ma, ea), (vb, mb, eb) = _as_matrices(a, "a"), _as_matrices(b, "b")
    confidences = [x._confidence for x in (a, b) if x._confidence is not None]
    confidence = min(confidences) if confidences else None
    from ..accuracy.gemm_envelope import gemm_envelope
    with np.errstate(over="ignore", invalid="ignore"):
        bound = gemm_envelope(va, vb, d, "cpu" if xp is np else "gpu", magnitudes=(ma, mb), errors=(ea, eb),
                              kind="rigorous" if confidence is None else "probabilistic",
                              confidence=confidence or 0.5)          # (ignored when rigorous)
        bound = unknown_where_not_finite(rounded_up(bound.reshape(value.shape), xp), value, xp)
    return TrackedArray._wrap(value, bound, d, confidence)


UFUNCS[np.matmul] = lambda a, b: matmul(a, b)


@implements(np.einsum)
def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """``np.einsum(subscripts, *operands)`` of tracked operands: pairwise tracked products, left to
    right, after moving each operand's axes into (batch, free, summed) order (module docstring).
    ``dtype`` may name the result's own (float32), as dask's chunks do; ``order`` and ``casting``
    then change nothing."""
    if out is not None or not isinstance(subscripts, str):
        raise TypeError("einsum: tracked arrays take a subscripts string and no out=; expected "
                        "e.g. np.einsum('ij,jk->ik', a, b)")
    if dtype is not None and np.dtype(dtype) != np.float32:
        raise TypeError(f"einsum: dtype={np.dtype(dtype)} would cast a tracked result; expected "
                        "dtype=None or float32")
    like = next(x for x in operands if isinstance(x, TrackedArray))
    arrays = [operand(x, "einsum", f"operand {i}", like) for i, x in enumerate(operands)]
    labels, output = einsum_labels(subscripts, [x.shape for x in arrays])
    for i, s in enumerate(labels):
        others = set(output).union(*[t for j, t in enumerate(labels) if j != i])
        if len(set(s)) != len(s) or not set(s) <= others:
            raise ValueError(f"einsum: tracked operands of {subscripts!r} repeat a label within one operand "
                             "or sum a label of one operand only; expected each label in two operands or "
                             "in the output (take the diagonal or the sum first)")
    current, have = arrays[0], labels[0]
    for i, (x, s) in enumerate(zip(arrays[1:], labels[1:]), 1):
        needed = set(output).union(*labels[i + 1:])
        keep = output if i == len(arrays) - 1 else "".join(c for c in dict.fromkeys(have + s) if c in needed)
        current, have = _contract(current, x, have, s, keep), keep
    return np.transpose(current, [have.index(c) for c in output]) if len(arrays) == 1 else current


def _contract(a, b, sub_a, sub_b, sub_out):
    """The tracked contraction ``sub_a,sub_b->sub_out`` as one batched matmul."""
    batch, free_a, free_b, summed, lengths = label_groups(sub_a, sub_b, sub_out, a.shape, b.shape)
    rows, inner, cols = (int(np.prod(lengths(x))) for x in (free_a, summed, free_b))
    a3 = np.transpose(a, [sub_a.index(c) for c in batch + free_a + summed]).reshape(lengths(batch) + (rows, inner))
    b3 = np.transpose(b, [sub_b.index(c) for c in batch + summed + free_b]).reshape(lengths(batch) + (inner, cols))
    arranged = batch + free_a + free_b
    c = matmul(a3, b3, op="einsum").reshape(lengths(arranged))
    return np.transpose(c, [arranged.index(x) for x in sub_out])
