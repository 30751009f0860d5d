"""The plan cache of the public GPU calls: a call whose signature came before skips its host work.

A signature is the operation, its options (scheme, precision, the defaults of
:func:`splitprec.default_scheme`, lengths, axes, norm), the shapes, strides and dtypes of its cupy
operands, the device, the current stream and the calling thread; nothing else decides which kernels
a call launches. The thread is part of it because a replay fills its graph's own operand copies:
two threads on one stream (cupy's default) must not share them.
The first call with a signature runs as usual (checks, scheme and engine choice, compiles) and is
remembered. A call whose launches the engine can repeat directly (``direct``: cuBLAS SGEMM and its
fix-up, ``sgemm_small``, the fused engine) repeats them from then on; otherwise the second call
captures the launches as a CUDA graph (:class:`splitprec.engines.cuda.replay.GraphCall`), and every
later one replays it: a copy of the operands in, one graph launch, a copy of the result out, with
no check, no choice and no wait repeated. Calls the graph cannot hold run as before: operands with
gaps or broadcast axes, more than ``replay.MAX_BYTES`` of operands and result (the device sets the
pace there), work that reads the device back. The ``MAX_PLANS`` most recent signatures are kept, with the memory of their graphs.
"""
import collections
import sys
import threading

from ._defaults import current_defaults
from .engines.cuda import replay

MAX_PLANS = 64


class _Plan:
    """What is known of a signature: its direct launches, or whether its call fits a graph and the
    graph once captured."""

    __slots__ = ("direct", "fits", "graph", "reason")

    def __init__(self, direct, fits):
        self.direct, self.fits, self.graph, self.reason = direct, fits, None, None


_PLANS = collections.OrderedDict()
_LOCK = threading.Lock()          # the dictionary's order and size, across threads


def signature(op, operands, options):
    """The plan key of ``op`` on ``operands`` with ``options`` (hashable) when every operand is a
    cupy ndarray; None otherwise (nothing is cached for other arrays)."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    layouts = []
    for x in operands:
        if type(x) is not cupy.ndarray:
            return None
        layouts.append((x.shape, x.strides, x.dtype))
    options = tuple(tuple(o) if isinstance(o, list) else o for o in options)     # s=[...], axes=[...]
    key = (op, options, current_defaults(), cupy.cuda.runtime.getDevice(), cupy.cuda.get_current_stream().ptr,
           threading.get_ident(), *layouts)
    try:
        hash(key)
    except TypeError:           # an unhashable option: the call checks and reports it
        return None
    return key


def planned(op, operands, options, run, direct=None):
    """``run(*operands)``, through the plan of its signature when it has one (module docstring).
    ``direct(*operands)``, asked once after a first call that succeeded: a function repeating the
    call's launches on operands of this signature without its checks, or None."""
    key = signature(op, operands, options)
    return run(*operands) if key is None else call(key, run, operands, direct)


def call(key, run, operands, direct=None):
    """``run(*operands)`` through the plan of ``key`` (module docstring; ``direct``: see :func:`planned`)."""
    with _LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
    if plan is None:
        result = run(*operands)
        launches = None if direct is None else direct(*operands)
        with _LOCK:
            _PLANS[key] = _Plan(launches, launches is None and replay.capturable((*operands, result)))
            if len(_PLANS) > MAX_PLANS:
                _PLANS.popitem(last=False)
        return result
    if plan.direct is not None:
        return plan.direct(*operands)
    if plan.graph is None and plan.fits:
        try:
            plan.graph = replay.GraphCall(run, operands)
        except replay.CaptureError as err:
            plan.fits, plan.reason = False, str(err)
    return run(*operands) if plan.graph is None else plan.graph(*operands)


def reason(key):
    """Why the calls of ``key`` could not be captured (the CUDA error), or None."""
    plan = _PLANS.get(key)
    return None if plan is None else plan.reason


def how(key):
    """How the next call of ``key`` runs: ``"first"`` (no plan yet), ``"direct"``, ``"graph"``
    (replayed), ``"capture"`` (the next call captures) or ``"eager"`` (the graph cannot hold it)."""
    plan = _PLANS.get(key)
    if plan is None:
        return "first"
    if plan.direct is not None:
        return "direct"
    return "graph" if plan.graph is not None else "capture" if plan.fits else "eager"


def clear():
    """Forget every plan and free the memory of their graphs."""
    with _LOCK:
        _PLANS.clear()
