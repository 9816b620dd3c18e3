#!/usr/bin/env python3
"""Tally the H200 targets of issue 5 in a gdn_bench JSON file (medians).

Usage: python3 tools/profiling/targets.py BENCH.json [MORE.json ...]
Later files replace earlier ones case by case.

Target cases (B >= 128, D128 and D64, float and bf16 state):
  verify T = 1, 2, 4: roofline_frac >= 0.60; T = 8: >= 0.50
  fold L = 1 and L = 36, T = 1 to 8: bw_frac >= 0.80
  fwd T = 1 (decode): bw_frac >= 0.75

For every missed case it prints the time the target needs (the case's
roofline time, max(bytes / copy_bw, flops / fp32_peak), over the target
fraction) and a lower bound on the time of any kernel under the same fenced
measurement: what this call paid outside its kernel (time_us - gpu_us; the
context's launch_floor_us when gpu_us is absent) plus the roofline time.
Where the bound exceeds the time needed, no kernel can meet that target
under the benchmark's method ("bound > need"). For long calls time_us -
gpu_us is within the noise of the two medians (it can come out negative);
it matters for the short ones.

With copy_us in the JSON (a copy of the case's own byte count timed the
same way, perf/bench_gdn.cpp) it also prints that time; where it exceeds
the time needed, a plain copy of those bytes would miss the target too
("copy > need"): the target asks for more than a copy of that size achieves.
The copy is a reference, not a bound: a kernel can beat it, e.g. when its
state stays in the cache across calls and the copy's two buffers do not.
"""
import json
import os
import sys

# perf/render.py, two folders up: the names, runs and roofline the benchmark pages use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from render import parse_name, select_runs  # noqa: E402  (the names and runs render.py reads)


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data.get("context", {}), select_runs(data.get("benchmarks", []))


def target(name):
    kernel, f = parse_name(name)
    if kernel not in ("fwd", "verify", "fold") or int(f.get("B", 0)) < 128:
        return None
    window = int(f.get("T", 0))
    if kernel == "verify":
        return "roofline_frac", 0.6 if window <= 4 else 0.5
    if kernel == "fold":
        return ("bw_frac", 0.8) if f.get("L") in ("1", "36") else None
    return ("bw_frac", 0.75) if window == 1 else None


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    ctx, cases = load(argv[1])
    for path in argv[2:]:
        cases.update(load(path)[1])
    copy_bw = float(ctx["copy_bw"])
    peak = float(ctx["fp32_peak"])
    floor = float(ctx.get("launch_floor_us", 0))
    met, total, missed = 0, 0, []
    for name in sorted(cases):
        t = target(name)
        b = cases[name]
        if t is None or b.get("error_occurred"):
            continue
        key, goal = t
        total += 1
        if b[key] >= goal:
            met += 1
            continue
        roof = b["bytes"] / copy_bw
        if key == "roofline_frac":
            roof = max(roof, b["flops"] / peak)
        roof *= 1e6
        outside = b["time_us"] - b["gpu_us"] if "gpu_us" in b else floor
        missed.append((name, b[key], goal, b["time_us"], roof / goal, outside + roof,
                       b.get("copy_us")))
    print(f"targets met: {met} of {total}")
    print(f"{'missed case':42s} {'frac':>6s} {'goal':>5s} {'time_us':>8s} {'need_us':>8s} "
          f"{'bound_us':>8s} {'copy_us':>8s}")
    for name, frac, goal, time, need, bound, copy in missed:
        flags = (["bound > need"] if bound > need else []) + (
            ["copy > need"] if copy is not None and copy > need else [])
        copy_text = "-" if copy is None else f"{copy:.1f}"
        print(f"{name:42s} {100 * frac:5.1f}% {100 * goal:4.0f}% {time:8.1f} {need:8.1f} "
              f"{bound:8.1f} {copy_text:>8s}" + ("  " + ", ".join(flags) if flags else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
