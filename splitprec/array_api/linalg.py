"""The standard's linear algebra extension for SplitArrays.

Contractions run in the scheme: ``matmul vecdot tensordot outer matrix_power`` (splitprec.array.contractions);
``vector_norm`` (2-norm) and ``matrix_norm`` (Frobenius) use the compensated sum of squares
(splitprec.array.functions); ``trace diagonal matrix_transpose cross`` and the decompositions and
solvers (``cholesky det eigh eigvalsh inv pinv qr slogdet solve svd svdvals matrix_rank``) run
numpy's (cupy's) float32 routines on the values: float32 accuracy, not the scheme's.
"""
import functools

import numpy as np

_FROM_NUMPY = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm""".split()
globals().update({name: getattr(np.linalg, name) for name in _FROM_NUMPY})
__all__ = sorted(_FROM_NUMPY)
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only
