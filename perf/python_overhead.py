#!/usr/bin/env python3
"""The cost of calling gdn from Python over calling it from C++.

Method. For each call (verify, fold, forward) the same tensors go through
  - Python: `iterations` back-to-back calls of the gdn package's function
    (DLPack borrow of every argument, checks, the stream lookup for CUDA
    tensors, the launch), timed with time.perf_counter;
  - C++: the same launch `iterations` times in a loop inside the module
    (gdn._time_cpp: the arguments are borrowed once, then only the C++ API
    call repeats), timed with Kokkos::Timer.
Both loops start after a fence and report, per call, the time until the last
call returned ("issue") and until the space was fenced after it ("total").
On CUDA the issue time is the host's cost per call while the GPU runs
behind it; the total is bounded by the GPU's work when that is larger. The
Python overhead is python - C++ of the issue time. Each figure is the median
of `--repeats` loops after a warm-up.

Cases: the problem (B sequences of T tokens, Qwen3-Next heads by default:
nk 16, nv 32, Dk = Dv 128, one layer, float32 state and ring) and the same
calls with B = 0 (nothing to launch: validation and dispatch only).

Usage: PYTHONPATH=<build>/python python3 perf/python_overhead.py [--device cuda|cpu]
       [--batch 256] [--tokens 4] [--heads 16,32,128] [--iterations 200] [--repeats 7]
"""

import argparse
import platform
import statistics
import time

import torch

import gdn


def make_case(device, batch, tokens, nk, nv, dk, state_dtype=torch.float32):
    cfg = gdn.HeadConfig(nk, nv, dk, dk)
    g = torch.Generator().manual_seed(0)
    n = batch * tokens
    qkv = torch.randn(n, cfg.conv_dim, generator=g).to(device)
    decay = (0.8 + 0.2 * torch.rand(n, nv, generator=g)).to(device)
    beta = torch.rand(n, nv, generator=g).to(device)
    off = torch.arange(0, n + 1, tokens, dtype=torch.int32, device=device)
    slots = torch.arange(batch, dtype=torch.int32, device=device)
    state = (0.1 * torch.randn(max(batch, 1), nv, dk, dk, generator=g)).to(device, state_dtype)
    out = torch.empty(n, cfg.value_dim, device=device)
    rec = gdn.ring_record_elements(dk, dk, nv // nk)
    ring = torch.zeros(max(batch, 1), nk, tokens, rec, device=device)
    acc = torch.full((batch,), tokens // 2, dtype=torch.int32, device=device)
    cuda = device == "cuda"
    rows = slots.view(1, batch)  # [L = 1, B]
    fwd = (cfg, qkv, decay, beta, off, slots, state, out)
    verify = fwd + (slots, ring)
    fold = (cfg, rows, state, rows, ring, acc)
    return {"verify": (gdn.recurrence_verify_ring, verify), "fold": (gdn.state_fold, fold),
            "fwd": (gdn.recurrence_fwd, fwd)}


def fence(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_python(fn, args, iterations, device):
    fence(device)
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn(*args)
    t1 = time.perf_counter()
    fence(device)
    t2 = time.perf_counter()
    return (t1 - t0) / iterations, (t2 - t0) / iterations


def time_cpp(name, args, iterations, device):
    stream = torch.cuda.current_stream().cuda_stream if device == "cuda" else None
    issue, total = gdn._gdn._time_cpp(name, iterations, *args, stream)
    return issue / iterations, total / iterations


def measure(name, fn, args, iterations, repeats, device):
    time_python(fn, args, 3, device)  # warm-up (first use of the stream, carveout, ...)
    time_cpp(name, args, 3, device)
    py, cpp = [], []
    for _ in range(repeats):  # interleaved, so drifts hit both
        py.append(time_python(fn, args, iterations, device))
        cpp.append(time_cpp(name, args, iterations, device))

    def med(xs, i):
        return statistics.median(x[i] for x in xs) * 1e6

    return {"py_issue": med(py, 0), "py_total": med(py, 1), "cpp_issue": med(cpp, 0),
            "cpp_total": med(cpp, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--heads", default="16,32,128", help="nk,nv,Dk")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", default="verify,fold,fwd")
    o = ap.parse_args()
    nk, nv, dk = (int(x) for x in o.heads.split(","))
    if o.device == "cuda":
        where = torch.cuda.get_device_name()
    else:
        where = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads)"
    print(f"gdn Python call overhead on {where}; torch {torch.__version__}, gdn {gdn.__version__}")
    print(f"heads nk {nk}, nv {nv}, Dk = Dv {dk}; {o.iterations} calls per loop, median of "
          f"{o.repeats} loops; times per call in us")
    print(f"{'case':<22}{'py issue':>10}{'C++ issue':>11}{'overhead':>10}{'py total':>10}"
          f"{'C++ total':>11}")
    for batch in (o.batch, 0):
        case = make_case(o.device, batch, o.tokens, nk, nv, dk)
        for name in o.calls.split(","):
            fn, args = case[name]
            r = measure(name, fn, args, o.iterations, o.repeats, o.device)
            label = f"{name} B={batch} T={o.tokens}"
            print(f"{label:<22}{r['py_issue']:>10.2f}{r['cpp_issue']:>11.2f}"
                  f"{r['py_issue'] - r['cpp_issue']:>10.2f}{r['py_total']:>10.2f}"
                  f"{r['cpp_total']:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
