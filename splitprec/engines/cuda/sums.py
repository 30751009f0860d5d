"""float32 arrays added in float64 and rounded once to float32, in one pass over memory
(``kernels/float64_sum_sm80.cu``): the combination of a blocked product's k-chunk partials."""
import numpy as np

from . import launch

SUM_FILE = "float64_sum_sm80.cu"


def float64_sum(parts):
    """``float32(parts[0] + parts[1] + ...)``, the sum in float64 from the left (each float32 value
    widened exactly) rounded once to nearest even, for cupy float32 arrays of one shape: the bits
    of numpy's ``sum(p.astype(float64) for p in parts).astype(float32)``, subnormals included, as
    one kernel where cupy's elementwise float64 steps would take a pass over memory each."""
    import cupy
    if not parts:
        raise ValueError("float64_sum: expected at least one array")
    shape = parts[0].shape
    if any(p.dtype != np.float32 or p.shape != shape for p in parts):
        raise ValueError(f"float64_sum: expected float32 arrays of one shape; got "
                         f"{[(p.dtype.name, p.shape) for p in parts]}")
    parts = [cupy.ascontiguousarray(p) for p in parts]
    out = cupy.empty(shape, np.float32)
    if out.size:
        addresses = np.array([p.data.ptr for p in parts], np.uint64)
        aligned = not (addresses % 16).any()                  # the output is (cupy's pool: 512 bytes)
        grid = min(-(-out.size // (4 * 256 if aligned else 256)), 8 * launch.multiprocessors())
        launch.launch(SUM_FILE, "float64_sum", (grid, 1, 1), (256, 1, 1),
                      (cupy.asarray(addresses), np.int32(len(parts)), out, np.int64(out.size), np.int32(aligned)))
    return out
