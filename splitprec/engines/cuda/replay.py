"""A GPU call replayed as a CUDA graph: captured once per call signature, then launched whole.

A public call on cupy arrays spends most of its time on the host (checks, scheme and engine choice,
a Python-level launch per kernel). For one signature (shapes, strides, dtypes, options, device,
stream) that host work decides the same launches every time, so :class:`GraphCall` captures them
once: its operands are plan-owned copies, its temporaries come from a plan-owned memory pool, and
each replay copies the caller's operands in, launches the graph and copies the result out into a
fresh array. A call whose work is not capturable (one that reads the device back, as the adaptive
fp64 plan does) raises :class:`CaptureError`, and its caller keeps running it directly.
"""
MAX_BYTES = 1 << 24        # operands and result of a captured call, together (larger calls: the device sets the pace)
_DEVICE_TO_DEVICE = 3      # cudaMemcpyDeviceToDevice


class CaptureError(RuntimeError):
    """The call could not be captured as a CUDA graph (it waits for the device, or CUDA refused)."""


def dense_span(x):
    """``(first byte offset, bytes)`` of cupy ``x``'s elements when they fill that span exactly (any
    order of axes, as a transpose gives), else None (gaps, overlaps or broadcast axes)."""
    if x.size == 0:
        return None
    step, first = x.itemsize, 0
    for extent, stride in sorted(((e, s) for e, s in zip(x.shape, x.strides) if e > 1), key=lambda es: abs(es[1])):
        if abs(stride) != step:
            return None
        first += min(0, (extent - 1) * stride)
        step *= extent
    return first, step


def _owned_like(x, span):
    """A new array of ``x``'s shape, dtype and strides from the current allocator (``span`` from
    :func:`dense_span`)."""
    import cupy
    first, size = span
    memory = cupy.cuda.alloc(size)
    return cupy.ndarray(x.shape, x.dtype, memory + (-first), x.strides)


def capturable(arrays):
    """True when every array of ``arrays`` (the operands and the result) is dense, nonempty and they
    hold at most ``MAX_BYTES`` together."""
    spans = [dense_span(x) for x in arrays]
    return all(spans) and sum(size for _, size in spans) <= MAX_BYTES


class GraphCall:
    """``run(*operands)`` (cupy arrays in, one cupy array out) as a CUDA graph for operands of the
    shapes, dtypes and strides of ``operands``; ``graph(*new_operands)`` replays it on the current
    stream and returns a fresh array, as ``run`` would have."""

    def __init__(self, run, operands):
        import cupy
        self._pool = cupy.cuda.MemoryPool()
        current = cupy.cuda.get_current_stream()
        side = cupy.cuda.Stream(non_blocking=True)
        with cupy.cuda.using_allocator(self._pool.malloc):
            self._spans = [dense_span(x) for x in operands]
            self._operands = [_owned_like(x, span) for x, span in zip(operands, self._spans)]
            side.wait_event(current.record())
            with side:
                side.begin_capture()
                try:
                    result = run(*self._operands)
                except Exception as err:
                    _end_quietly(side)
                    raise CaptureError(f"the call is not capturable: {err}") from err
                try:
                    self._graph = side.end_capture()
                except Exception as err:
                    raise CaptureError(f"CUDA ended the capture with an error: {err}") from err
        span = dense_span(result) if isinstance(result, cupy.ndarray) else None
        if span is None:
            raise CaptureError("the call's result is not one dense cupy array")
        self._result, self._result_span = result, span

    def __call__(self, *operands):
        import cupy
        stream = cupy.cuda.get_current_stream().ptr
        copy = cupy.cuda.runtime.memcpyAsync
        for own, x, (first, size) in zip(self._operands, operands, self._spans):
            copy(own.data.ptr + first, x.data.ptr + first, size, _DEVICE_TO_DEVICE, stream)
        self._graph.launch()
        result = self._result
        first, size = self._result_span
        out = cupy.empty(result.shape, result.dtype) if result.flags.c_contiguous else \
            _owned_like(result, self._result_span)
        copy(out.data.ptr + first, result.data.ptr + first, size, _DEVICE_TO_DEVICE, stream)
        return out


def _end_quietly(stream):
    """End a capture that failed part way (CUDA reports it invalidated; that report is the
    expected one)."""
    try:
        stream.end_capture()
    except Exception:       # noqa: BLE001 (the capture is discarded either way)
        pass
