"""Host time of public GPU calls: µs per call over a loop of calls with one synchronize at the end
(``host_us``; ``enqueue_us``: the loop without that synchronize), on inputs small enough that the host
sets the pace, beside cupy's (and torch's) own calls in the same run, each row the median of
``ROUNDS`` interleaved rounds. ``python3 benchmarks/host_time.py [--out DIR]`` writes ``host-time-<date>-<sha>.json``."""
import argparse
import json
import pathlib
import sys
import time

import cupy
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gemm as bench  # noqa: E402  (header)
import splitprec as sp  # noqa: E402

CALLS = 300
ROUNDS = 3            # over the whole list, forward, backward, forward: each row the median
SCHEMES = ["fp16x3", "tf32x3", "bf16x6", "bf16x9"]


def host_us(fn, calls=CALLS):
    """``(enqueue, wall)`` µs per call of ``calls`` calls back to back after two warm calls: the
    host's time to queue them (the loop alone) and with the final synchronize (where the GPU's
    work is the longer, its time)."""
    fn()
    fn()
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    queued = time.perf_counter()
    cupy.cuda.Device().synchronize()
    end = time.perf_counter()
    return (queued - start) / calls * 1e6, (end - start) / calls * 1e6


def cases():
    rng = np.random.default_rng(0)
    g = lambda *shape: cupy.asarray(rng.standard_normal(shape, dtype=np.float32))   # noqa: E731
    rows = []
    for label, a, b in (("64^2", g(64, 64), g(64, 64)), ("256^2", g(256, 256), g(256, 256)),
                        ("1024^2", g(1024, 1024), g(1024, 1024)), ("64 x 8^3", g(64, 8, 8), g(64, 8, 8))):
        rows.append(("cupy.matmul", label, lambda a=a, b=b: cupy.matmul(a, b)))
        try:
            import torch
            ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
            rows.append(("torch.matmul", label, lambda ta=ta, tb=tb: torch.matmul(ta, tb)))
        except ImportError:
            pass
        for name in SCHEMES:
            rows.append((f"sp.matmul {name}", label, lambda a=a, b=b, name=name: sp.matmul(a, b, dtype=name)))
        rows.append(("sp.matmul precision=fp32", label, lambda a=a, b=b: sp.matmul(a, b, precision="fp32")))
    x = cupy.asarray(rng.standard_normal((16, 2048), dtype=np.float32)).view(np.complex64)
    r = cupy.asarray(rng.standard_normal((16, 1024), dtype=np.float32))
    rows += [("cupy.fft.fft", "16 x 1024", lambda: cupy.fft.fft(x)),
             ("sp.fft.fft bf16x6", "16 x 1024", lambda: sp.fft.fft(x, dtype="bf16x6")),
             ("cupy.fft.rfft", "16 x 1024", lambda: cupy.fft.rfft(r)),
             ("sp.fft.rfft bf16x6", "16 x 1024", lambda: sp.fft.rfft(r, dtype="bf16x6"))]
    a64, b64 = (cupy.asarray(rng.standard_normal((64, 64))) for _ in range(2))
    rows += [("cupy.matmul float64", "64^2", lambda: cupy.matmul(a64, b64)),
             ("sp.matmul ozaki2_int8x14", "64^2", lambda: sp.matmul(a64, b64, dtype="ozaki2_int8x14"))]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    head = bench.header()
    rows = cases()
    rounds = [[host_us(fn) for _, _, fn in (rows if r % 2 == 0 else rows[::-1])] for r in range(ROUNDS)]
    records = []
    for i, (call, size, _) in enumerate(rows):
        times = [rounds[r][i if r % 2 == 0 else len(rows) - 1 - i] for r in range(ROUNDS)]
        enqueue, wall = (float(np.median([t[j] for t in times])) for j in (0, 1))
        records.append({"call": call, "size": size, "host_us": wall, "enqueue_us": enqueue})
        print(f"{call:28s} {size:10s} {wall:7.1f} us/call  (queued in {enqueue:.1f})", flush=True)
    out = pathlib.Path(args.out) / f"host-time-{head['date'][:10]}-{head['git_sha']}.json"
    out.write_text(json.dumps({**head, "calls": CALLS, "rounds": ROUNDS, "results": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
