"""The splitprec accuracy harness: exact references, derived bounds, cases, search and reports.

Public functions: :func:`exact_matmul`, :func:`exact_dft` (references), :func:`gemm_bound`,
:func:`fft_bound`, :func:`rfft_bound` (bounds, derived in docs/bounds.md; rigorous, or with
``kind="probabilistic"`` Higham & Mary's sqrt(n) bound at a stated confidence), :func:`check` (your matrices, every
scheme; :func:`gemm_schemes` lists them per target), and the ``splitprec report`` command (:mod:`accuracy.cli`). The harness uses only the
public API of splitprec.
"""
import functools

from .bounds import gemm_bound
from .fft_bounds import fft_bound, rfft_bound
from .measure import check, gemm_schemes
from .reference import exact_dft, exact_matmul

__all__ = ["check", "exact_dft", "exact_matmul", "fft_bound", "gemm_bound", "gemm_schemes", "rfft_bound"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only
