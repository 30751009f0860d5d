"""``precision="fp32"``'s SGEMM path: cuBLAS SGEMM with its fix-up pass overlapped.

The fix-up (``nonfinite.fix_sgemm``: the float64 product's NaN/inf and range) reads all of C once
after SGEMM. Where C is large (batches of small matrices) that pass costs 10-20% of SGEMM's time, so
:func:`sgemm_checked` runs SGEMM in chunks (along the batch, or the rows of one product), each
chunk's fix-up reading its C on a side stream while SGEMM computes the next chunk: C is read while
it is still in L2, beside SGEMM, and only the last chunk's pass (the smallest) is exposed. The bound
is SGEMM's (``accuracy.gemm_bound(..., precision="fp32", engine="gpu")``, docs/bounds.md section
16), which holds for any split of k, m or the batch.
"""
import functools

from .gemm_cublas import sgemm_pointers
from .nonfinite import sgemm_fixup
from .tuning import TUNING

OVERLAP = TUNING["precision_fp32"]["overlap"]


@functools.lru_cache(maxsize=None)
def _side_stream(device):
    """A non-blocking stream of ``device`` for the fix-up passes (one per device, never freed)."""
    import cupy
    with cupy.cuda.Device(device):
        return cupy.cuda.runtime.streamCreateWithFlags(1)


def chunk_bounds(length, chunks):
    """``min(chunks, length)`` consecutive nonempty ranges covering ``range(length)``, the last about
    half the others (its fix-up pass is the one left exposed): ``[(start, stop), ...]``."""
    chunks = min(chunks, length)
    units, bounds, start = 2 * chunks - 1, [], 0
    for i in range(chunks):
        stop = length if i == chunks - 1 else \
            max(start + 1, min(-(-length * 2 * (i + 1) // units), length - (chunks - 1 - i)))
        bounds.append((start, stop))
        start = stop
    return bounds


class SgemmChecked:
    """cuBLAS SGEMM of contiguous float32 ``a`` (batch or 1, m, k), ``b`` (batch or 1, k, n) into ``c``
    (batch, m, n) with its fix-up, for one layout; called with the device pointers of ``a``, ``b``
    and ``c``. With ``chunks`` > 1, in that many chunks whose fix-ups run on a side stream (module
    docstring), the current stream waiting for the last; else SGEMM and its fix-up back to back.
    Default chunks: :func:`overlap_chunks`."""

    def __init__(self, m, n, k, batch, a_batched, b_batched, chunks=None):
        import cupy
        runtime = cupy.cuda.runtime
        along_batch = batch > 1
        chunks = overlap_chunks(m, n, batch) if chunks is None else chunks
        self._steps = []
        for start, stop in chunk_bounds(batch if along_batch else m, chunks):
            size = stop - start
            if along_batch:
                shape = (m, n, k, size, m * k if a_batched else 0, k * n if b_batched else 0)
                offsets = (start * m * k * a_batched, start * k * n * b_batched, start * m * n)
                fixup = sgemm_fixup(m, n, k, size, a_batched, b_batched)
            else:
                shape, offsets = (size, n, k, 1, 0, 0), (start * k, 0, start * n)
                fixup = sgemm_fixup(size, n, k, 1, False, False)
            self._steps.append((shape, tuple(4 * o for o in offsets), fixup))
        self._runtime = runtime
        self._events = [runtime.eventCreateWithFlags(2) for _ in self._steps] if len(self._steps) > 1 else []
        self._side = _side_stream(runtime.getDevice()) if self._events else None

    def __del__(self):
        try:
            for event in self._events:
                self._runtime.eventDestroy(event)
        except Exception:       # noqa: BLE001 (interpreter shutdown: the driver frees them anyway)
            pass

    def __call__(self, a, b, c):
        if not self._events:
            (shape, _, fixup), = self._steps
            sgemm_pointers(a, b, c, shape)
            fixup(a, b, c)
            return
        import cupy
        runtime, side = self._runtime, self._side
        main = cupy.cuda.get_current_stream().ptr
        for (shape, (off_a, off_b, off_c), fixup), ready in zip(self._steps, self._events):
            sgemm_pointers(a + off_a, b + off_b, c + off_c, shape)
            runtime.eventRecord(ready, main)
            runtime.streamWaitEvent(side, ready, 0)
            fixup(a + off_a, b + off_b, c + off_c, stream=side)
        runtime.eventRecord(self._events[-1], side)      # reused: the last chunk's wait is queued
        runtime.streamWaitEvent(main, self._events[-1], 0)


def overlap_chunks(m, n, batch):
    """Chunks of :class:`SgemmChecked` for a product with ``batch * m * n`` results: one per
    ``OVERLAP["chunk_bytes"]`` of C, at most ``OVERLAP["max_chunks"]`` (``tuning.json``) and at most
    the batch (or m); 1 runs SGEMM and its fix-up back to back."""
    return max(1, min(OVERLAP["max_chunks"], 4 * batch * m * n // OVERLAP["chunk_bytes"], batch if batch > 1 else m))
