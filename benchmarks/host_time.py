"""Host time of a public call: µs of Python and launches per call while calls run back to back with
no synchronisation, on inputs small enough that the GPU work takes less than the host's (so the
host sets the pace), beside cupy's own calls: ``PYTHONPATH=. python3 benchmarks/host_time.py``."""
import time

import cupy
import numpy as np

import splitprec as sp


def host_us(fn, calls=300):
    fn()
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    cupy.cuda.Device().synchronize()
    return elapsed / calls * 1e6


def main():
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal((16, 2048)).astype(np.float32).view(np.complex64))
    r = cupy.asarray(rng.standard_normal((16, 1024)).astype(np.float32))
    a, b = (cupy.asarray(rng.standard_normal((64, 8, 8)).astype(np.float32)) for _ in range(2))
    m = cupy.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    w = cupy.asarray(rng.standard_normal((256, 256)).astype(np.float32))
    cases = {"cupy.fft.fft 16x1024": lambda: cupy.fft.fft(x), "sp.fft.fft 16x1024": lambda: sp.fft.fft(x),
             "cupy.fft.rfft 16x1024": lambda: cupy.fft.rfft(r), "sp.fft.rfft 16x1024": lambda: sp.fft.rfft(r),
             "cupy.matmul 64x8^3": lambda: cupy.matmul(a, b),
             "sp.matmul fp16x3 64x8^3": lambda: sp.matmul(a, b, dtype="fp16x3"),
             "sp.matmul bf16x6 64x8^3": lambda: sp.matmul(a, b, dtype="bf16x6"),
             "cupy.matmul 64^3": lambda: cupy.matmul(m, m),
             "sp.matmul fp16x3 64^3": lambda: sp.matmul(m, m, dtype="fp16x3"),
             "sp.matmul tf32x3 64^3": lambda: sp.matmul(m, m, dtype="tf32x3"),
             "sp.matmul fp16x3 256^3 (wgmma kernel)": lambda: sp.matmul(w, w, dtype="fp16x3")}
    for name, fn in cases.items():
        print(f"{name}: host {host_us(fn):.1f} us/call", flush=True)


if __name__ == "__main__":
    main()
