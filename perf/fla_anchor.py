"""fla's Gated DeltaNet kernels on gdn_bench's shapes: the anchors of docs/performance.md.

fla (flash-linear-attention, Triton) has a forward over many tokens
(`chunk_gated_delta_rule`, 64-token chunks, tensor cores) and a per-token one
(`fused_recurrent_gated_delta_rule`); it has no verify with a ring and no fold.
This script times them on Qwen3-Next's layer (16 key heads, 32 value heads,
Dk = Dv = 128): bf16 q, k, v and beta, float32 log-decays, a float32 state
read from `initial_state` and written as the final state, the key and query
normalised in the kernel, as gdn does:

- prefill B x T (chunk_gated_delta_rule) for gdn_bench's `prefill` cases;
- decode B x T = 256 x 1 and 256 x 4 (fused_recurrent_gated_delta_rule) for
  its `fwd/.../B:256/T:1` and `T:4` cases.

Each call is captured once in a CUDA graph (after warm-up calls, which also
run Triton's autotuning) and replayed; a sample is the event time of
`--replays` replays divided by their number, and the figure is the median of
`--samples` samples: the kernels' time without Python's launch cost, as
gdn_bench's fenced time is a kernel's time with one launch.

Usage (fla is not a dependency of gdn: point PYTHONPATH at a checkout of it):
  PYTHONPATH=/path/to/flash-linear-attention python3 perf/fla_anchor.py --out fla.json
Prints one line per case and writes {case: {"time_us": ...}, "context": {...}} as JSON
(context: device, date, the torch, Triton and fla versions).
"""

import argparse
import importlib.util
import json
import os
import sys
import types

import torch


def import_fla_kernels():
    """fla's version and its two kernels, without running the package's re-exporting
    __init__ files (fla, fla.ops, fla.modules import every layer and model; these may need
    packages this machine lacks). einops, which fla's reference implementations import at
    the top of their files, is replaced by an empty module when it is missing: this script
    never calls those references."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("fla is not on PYTHONPATH (a checkout of flash-linear-attention)")
    root = list(spec.submodule_search_locations)[0]
    with open(os.path.join(root, "__init__.py"), encoding="utf-8") as f:
        version = next((line.split("=")[1].strip().strip("\"'") for line in f
                        if line.startswith("__version__")), "unknown")
    for name in ("fla", "fla.ops", "fla.modules"):
        pkg = types.ModuleType(name)
        pkg.__path__ = [os.path.join(root, *name.split(".")[1:])]
        pkg.__version__ = version
        sys.modules[name] = pkg
    try:
        import einops  # noqa: F401
    except ImportError:
        stub = types.ModuleType("einops")

        def unavailable(*args, **kwargs):
            raise RuntimeError("einops is not installed here")
        stub.rearrange = stub.repeat = stub.reduce = stub.einsum = unavailable
        sys.modules["einops"] = stub
    from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule
    from fla.ops.gated_delta_rule.fused_recurrent import fused_recurrent_gated_delta_rule
    return version, chunk_gated_delta_rule, fused_recurrent_gated_delta_rule


def inputs(batch, tokens, nk=16, nv=32, d=128, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    q = torch.randn(batch, tokens, nk, d, generator=g, **bf16)
    k = torch.randn(batch, tokens, nk, d, generator=g, **bf16)
    v = torch.randn(batch, tokens, nv, d, generator=g, **bf16)
    beta = torch.rand(batch, tokens, nv, generator=g, **bf16)
    # log-decays of decays in (0.8, 1), as gdn_bench's
    gate = torch.log(0.8 + 0.2 * torch.rand(batch, tokens, nv, generator=g, device="cuda"))
    h0 = 0.1 * torch.randn(batch, nv, d, d, generator=g, device="cuda")
    return q, k, v, gate, beta, h0


def time_graph(fn, replays, samples, warmup=3):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / replays)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="JSON file of the results")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    fla_version, chunk, recurrent = import_fla_kernels()
    cases = [(f"prefill/B:{b}/T:{t}", chunk, b, t)
             for b, t in ((1, 1024), (1, 4096), (1, 8192), (4, 4096), (16, 4096))]
    cases += [(f"fwd/B:256/T:{t}", recurrent, 256, t) for t in (1, 4)]
    import datetime

    import triton
    results = {"context": {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__, "triton": triton.__version__, "fla": fla_version}}
    print("fla_anchor: " + ", ".join(f"{k} {v}" for k, v in results["context"].items()))
    for name, kernel, b, t in cases:
        q, k, v, gate, beta, h0 = inputs(b, t)

        def call():
            kernel(q, k, v, g=gate, beta=beta, initial_state=h0, output_final_state=True,
                   use_qk_l2norm_in_kernel=True)
        try:
            us = time_graph(call, args.replays, args.samples)
        except Exception as e:  # an anchor that does not run is reported, not fatal
            print(f"{name}: failed: {type(e).__name__}: {e}")
            continue
        results[name] = {"time_us": us, "kernel": kernel.__name__}
        print(f"{name}: {us:.1f} us ({kernel.__name__})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
