"""Tracked arrays on cupy storage: values and bounds on the device, the same rules as on the CPU."""
import numpy as np
import pytest

import splitprec as sp
from splitprec.accuracy import exact_matmul

RNG = np.random.default_rng(5)


def _pair(data):
    cpu = sp.asarray(data, dtype="bf16x9", track_error=True)
    return cpu, sp.asarray(data, dtype="bf16x9", track_error=True, device="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("operation", [lambda x: x * 1.5 + 0.25, lambda x: np.sqrt(np.abs(x)) / 3.0,
                                       lambda x: np.exp(np.sin(x)) - np.log(np.abs(x) + 1),
                                       lambda x: np.maximum(x, -x).sum(axis=0), lambda x: x.mean(axis=1)])
def test_elementwise_and_sums_on_gpu_hold_their_bound_on_the_device(operation):
    data = RNG.standard_normal((8, 16)).astype(np.float32)
    cpu, gpu = _pair(data)
    with np.errstate(all="ignore"):
        on_cpu, on_gpu = operation(cpu), operation(gpu)
    assert on_gpu.device == "gpu" and type(on_gpu._bound).__module__.startswith("cupy")
    value, bound = on_gpu.value.get(), on_gpu.error_bound.get()
    assert (np.abs(value.astype(np.float64) - on_cpu.value) <= bound + on_cpu.error_bound).all()


@pytest.mark.gpu
def test_matmul_on_gpu_bound_covers_the_exact_product():
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((32, 256), (256, 16)))
    (_, ga), (_, gb) = _pair(a), _pair(b)
    c = ga @ gb
    assert c.device == "gpu"
    assert (np.abs(c.value.get() - exact_matmul(a, b)) <= c.error_bound.get()).all()


@pytest.mark.gpu
def test_fft_on_gpu_bound_covers_the_cpu_result_within_both_bounds():
    data = RNG.standard_normal((4, 64)).astype(np.float32)
    cpu, gpu = _pair(data)
    on_cpu, on_gpu = sp.fft.fft(cpu), sp.fft.fft(gpu)
    assert on_gpu.device == "gpu"
    assert (np.abs(on_gpu.value.get() - on_cpu.value) <= on_gpu.error_bound.get() + on_cpu.error_bound).all()
