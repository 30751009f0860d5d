"""Probabilistic rounding-error factors (Higham & Mary 2019) for ``kind="probabilistic"`` bounds.

Model (docs/bounds.md, section 13): the round-to-nearest errors ``delta`` of the accumulation are
independent random variables of mean zero with ``|delta| <= u``. Then a product of ``n`` factors
``(1 + delta)`` is ``1 + theta`` with ``|theta| <= gamma_tilde(n, lam)`` except with probability at
most ``2 exp(-lam**2 (1 - u)**2 / 2)`` (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019,
Theorem 3.1). An entry made of ``count`` such products fails with probability at most ``count``
times that, which :func:`lam` turns around: the ``lam`` for which an entry holds with probability
at least ``confidence``. Nothing here holds for adversarial data, whose errors need not be random.
"""
import math

KINDS = ("rigorous", "probabilistic")


def gamma_tilde(n, lam, u):
    """``exp(lam sqrt(n) u + n u**2 / (1 - u)) - 1`` (about ``lam sqrt(n) u``)."""
    return math.expm1(lam * math.sqrt(n) * u + n * u * u / (1 - u))


def lam(confidence, count, u):
    """The smallest ``lam`` with ``count * 2 exp(-lam**2 (1 - u)**2 / 2) <= 1 - confidence``."""
    return math.sqrt(2 * math.log(2 * max(count, 1) / (1 - confidence))) / (1 - u)


def check_kind(kind, confidence, op):
    """Validate ``kind`` and ``confidence`` at a public boundary; returns whether ``kind`` is
    probabilistic."""
    if kind not in KINDS:
        raise ValueError(f"{op}: unknown kind {kind!r}; expected one of 'rigorous', 'probabilistic'")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"{op}: confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return kind == "probabilistic"
