"""``precision="fp32"`` for batches of small products: ``kernels/sgemm_small_sm80.cu`` (sm_80 on).

A block holds a group of whole products (m, n and k of at most ``MAX``) in shared memory and runs
over the batch, copying the next group while it multiplies the current one: each operand is read
once and C written once, with NaN/inf and the range settled in the same kernel, where cuBLAS SGEMM
needs a second pass over C (``nonfinite.fix_sgemm``). Float32 FMAs in k order, subnormals kept: the
error of any float32 dot product (``accuracy.bounds.sgemm_bound``).
"""
import ctypes

from .launch import PreparedLaunch, resident_blocks
from .nonfinite import sgemm_limit

SMALL_FILE = "sgemm_small_sm80.cu"
EXPRESSION = "sgemm_small"
MAX = 64                      # m, n and k of at most this: a product's operands fit shared memory whole
THREADS = 256                 # threads per block at most (the kernel's launch bound)
SHARED_BUDGET = 48 * 1024     # a block's two buffers (at least one product's): 32^3 x 16384 ran 5% faster than with 72 KiB


def _round_up(x, multiple):
    return -(-x // multiple) * multiple


def layout(m, n, k):
    """``(products per block, threads, bytes of shared memory)`` of an m x n x k product, as the
    kernel's ``SmallLayout``: a thread per 4 x 4 tile of C; per buffer, A's rows (3 rows of slack
    after them) in rows of k rounded up to 8 plus 4 floats, then each B as (k, n), each dimension
    rounded up to 4; two buffers within ``SHARED_BUDGET``, at most ``THREADS`` threads."""
    nb, kp = _round_up(n, 4), _round_up(k, 4)
    stride_a = _round_up(kp, 8) + 4
    per_product = (_round_up(m, 4) // 4) * (nb // 4)
    product_floats, slack_floats = m * stride_a + kp * nb, 3 * stride_a
    group = max(1, min(THREADS // per_product, (SHARED_BUDGET // 8 - slack_floats) // product_floats))
    return group, group * per_product, 8 * (slack_floats + group * product_floats)


def small_launch(m, n, k, batch, a_batched, b_batched):
    """The prepared launch (``launch.PreparedLaunch``, called with the pointers of ``a``, ``b``,
    ``c``) of a (batch of) m x n x k product: ``layout``'s group of products per block, and as many
    blocks as the GPU runs at once."""
    if max(m, n, k) > MAX:
        raise ValueError(f"sgemm_small: m, n, k = {m}, {n}, {k}; expected each <= {MAX}")
    group, threads, shared = layout(m, n, k)
    grid = min(-(-batch // group), resident_blocks(SMALL_FILE, EXPRESSION, threads, shared))
    args = [ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(m), ctypes.c_int(n),
            ctypes.c_int(k), ctypes.c_longlong(batch), ctypes.c_int(a_batched), ctypes.c_int(b_batched),
            ctypes.c_float(sgemm_limit(k)), ctypes.c_int(group)]
    return PreparedLaunch(SMALL_FILE, EXPRESSION, (grid, 1, 1), (threads, 1, 1), args, shared_bytes=shared)


def sgemm_small(a, b, c):
    """``c`` (batch, m, n) = ``a @ b`` for contiguous float32 ``a`` (batch or 1, m, k) and ``b``
    (batch or 1, k, n), m, n, k <= ``MAX``, with the float64 product's NaN/inf and range."""
    batch, m, n = c.shape
    small_launch(m, n, a.shape[-1], batch, a.shape[0] > 1, b.shape[0] > 1)(a.data.ptr, b.data.ptr, c.data.ptr)
    return c
