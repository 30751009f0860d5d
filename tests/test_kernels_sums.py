"""The one-pass float64 sum of float32 arrays (kernels/float64_sum_sm80.cu, engines/cuda/sums.py):
it compiles for sm_90a and sm_80 with NVRTC, and on a GPU it gives numpy's bits."""
import functools
import operator

import numpy as np
import pytest

from splitprec.engines.cuda import sums

rng = np.random.default_rng(41)


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["90", "80"])
def test_float64_sum_kernel_compiles_with_nvrtc(arch):
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from test_kernels_gemm import _nvrtc_compile
    result, log = _nvrtc_compile(sums.SUM_FILE, ["float64_sum"], arch)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


def _scaled_normals(size):
    """N(0,1) float32 times 2**e, e uniform in [-150, 127]: zeros, subnormals, normals and ±inf."""
    exponents = rng.integers(-150, 128, size)
    with np.errstate(over="ignore"):
        return rng.standard_normal(size).astype(np.float32) * np.ldexp(np.float32(1), exponents).astype(np.float32)


@pytest.mark.gpu
def test_float64_sum_gives_numpys_rounded_float64_sum_bit_for_bit():
    """Subnormal inputs and sums, signed zeros, ties to even, overflow to inf, inf and NaN."""
    import cupy
    tiny = np.float32(2.0 ** -149)
    special = np.float32([0.0, -0.0, tiny, -tiny, 2.0 ** -126, 3e38, np.inf, -np.inf, np.nan, 1.0, 2.0 ** 24, -0.0])
    others = np.float32([tiny, 0, -tiny, tiny, -2.0 ** -127, 3e38, 1, np.inf, 1, 2.0 ** -24, 1, -0.0])
    scaled = [_scaled_normals(64 * 1024 + 3) for _ in range(3)]
    offset = [cupy.asarray(s)[1:] for s in scaled]         # 4-byte aligned: the kernel's scalar loop
    for group in ([special, special[::-1].copy(), others], scaled[:1], scaled, [s[:1 << 16].reshape(256, 256) for s in scaled],
                  offset):
        with np.errstate(over="ignore", invalid="ignore"):
            expected = functools.reduce(operator.add, [cupy.asnumpy(p).astype(np.float64) for p in group]).astype(np.float32)
        got = sums.float64_sum([cupy.asarray(p) for p in group]).get()
        nan = np.isnan(expected)
        assert got.shape == expected.shape and np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])


@pytest.mark.gpu
def test_float64_sum_rejects_mixed_shapes_and_dtypes():
    import cupy
    with pytest.raises(ValueError, match=r"^float64_sum: expected float32 arrays of one shape"):
        sums.float64_sum([cupy.zeros(3, np.float32), cupy.zeros(4, np.float32)])
    with pytest.raises(ValueError, match=r"^float64_sum: expected float32 arrays of one shape"):
        sums.float64_sum([cupy.zeros(3, np.float64)])
    with pytest.raises(ValueError, match=r"^float64_sum: expected at least one array$"):
        sums.float64_sum([])
