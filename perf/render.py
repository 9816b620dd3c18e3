#!/usr/bin/env python3
"""Render gdn_bench's Google Benchmark JSON as markdown tables.

usage: perf/render.py IN.json OUT.md

One table per kernel (fwd, verify, fold), one row per case. Case names are
`kernel/D<d>/key:value/...` (perf/bench_gdn.cpp). With --benchmark_repetitions
the median aggregate is shown; otherwise the single run of each case. Python 3
standard library only.
"""

import json
import sys

KERNELS = [
    ("fwd", "recurrence_fwd"),
    ("verify", "recurrence_verify_ring (RING_LEN = T, records written, state not written)"),
    ("fold", "state_fold (n = T accepted for every row, RING_LEN = T)"),
    ("prefill", "recurrence_fwd over B prompts of T tokens each"),
]


def parse_name(name):
    """'fold/D128/state:bf16/L:36/B:256/T:4' -> ('fold', {'shape': 'D128', ...})."""
    parts = name.split("/")
    fields = {"shape": parts[1] if len(parts) > 1 else ""}
    for p in parts[2:]:
        if ":" in p:
            key, value = p.split(":", 1)
            fields[key] = value
    return parts[0], fields


def fmt_num(x, digits):
    return "" if x is None else f"{x:.{digits}f}"


def fmt_si(x, unit):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:.1f} {prefix}{unit}"
    return f"{v:.1f} {unit}"


def select_runs(benchmarks):
    """Median aggregates when present, else the plain runs; keyed by case name, in order."""
    has_agg = any(b.get("run_type") == "aggregate" for b in benchmarks)
    runs = {}
    for b in benchmarks:
        if has_agg:
            if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
                continue
        elif b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"]).split("/iterations:")[0].split("/manual_time")[0]
        runs.setdefault(name, b)
    return runs


def time_us(b):
    if "time_us" in b:
        return float(b["time_us"])
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(b.get("time_unit", "ns"), 1e-3)
    return float(b["real_time"]) * scale


def case_key(f):
    """Registration order (also after --benchmark_enable_random_interleaving):
    L, then D128 before D64, float before bf16, then B and T."""

    def num(key, default=0):
        try:
            return int(str(f.get(key, default)).lstrip("D"))
        except ValueError:
            return default

    return (num("L"), -num("shape"), f.get("state", "") != "float", num("B"), num("T"))


def launch_floor(ctx):
    if "launch_floor_us" not in ctx:
        return "not measured (older gdn_bench)"
    def host(key):
        return f", {float(ctx[key]):.2f} us until the launch returned" if key in ctx else ""

    text = f"{float(ctx['launch_floor_us']):.2f} us (fenced empty Kokkos kernel, median"
    text += host("launch_host_us") + ")"
    if "cuda_launch_floor_us" in ctx:
        text += f"; {float(ctx['cuda_launch_floor_us']):.2f} us without Kokkos (<<<1, 1>>>"
        text += host("cuda_launch_host_us") + ")"
    if "launch_floor_device_us" in ctx:
        text += (f"; of the first, {float(ctx['launch_floor_device_us']):.2f} us on the GPU "
                 "(the empty kernel's own duration)")
    return text


def render(data):
    ctx = data.get("context", {})
    peak_method = ctx.get("fp32_peak_method", "?")
    out = ["# gdn benchmarks", ""]
    out.append("| | |")
    out.append("|---|---|")
    rows = [
        ("host", ctx.get("host_name", "?")),
        ("date", ctx.get("date", "?")),
        ("num_cpus", ctx.get("num_cpus", "?")),
        ("load_avg at start", ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", [])) or "?"),
        ("backend", f"{ctx.get('backend', '?')} (concurrency {ctx.get('concurrency', '?')})"),
        ("device", ctx.get("device", "?")),
        ("copy_bw", fmt_si(ctx.get("copy_bw"), "B/s") + " (deep_copy, read + write, median)"),
        ("fp32_peak", fmt_si(ctx.get("fp32_peak"), "FLOP/s") + f" ({peak_method})"),
        ("fp32 fma microkernel", fmt_si(ctx.get("fp32_peak_measured"), "FLOP/s")),
        ("launch floor", launch_floor(ctx)),
        ("Kokkos / gdn", f"{ctx.get('kokkos_version', '?')} / {ctx.get('gdn_version', '?')}"),
    ]
    for key, value in rows:
        out.append(f"| {key} | {value} |")
    out.append("")
    out.append(
        "time_us: median of fenced calls after warm-up (perf/bench_gdn.cpp states the method); "
        "host_us: median time until the call returned, before its fence (validation and launch). "
        + ("gpu_us: median GPU-side duration of the call's kernel (CUDA events queued "
           "behind a spinning kernel); time_us - gpu_us is paid outside the kernel. "
           if any("gpu_us" in b for b in data.get("benchmarks", [])) else "")
        + ("copy_us: median of fenced copies (deep_copy) of the case's own byte count, half "
           "read and half written: what a plain copy of that size takes under the same method. "
           if any("copy_us" in b for b in data.get("benchmarks", [])) else "")
        + "GB/s: minimal bytes moved / time. bw_frac = GB/s / copy_bw; "
        "roofline_frac = max(bytes / copy_bw, flops / fp32_peak) / time. "
        "Shapes: nk = 16, nv = 32, Dk = Dv = D; ring float."
    )
    out.append("")

    reps = max((int(b.get("repetitions", 1)) for b in data.get("benchmarks", [])
                if b.get("run_type") == "aggregate"), default=1)
    if reps > 1:
        out.append(
            f"Each case was measured {reps} times (in random order when interleaved); "
            "every column is the median of those measurements (Google Benchmark's median "
            "aggregate; the JSON holds every repetition)."
        )
        out.append("")
    runs = select_runs(data.get("benchmarks", []))
    for kernel, title in KERNELS:
        cases = sorted(
            ((n, b) for n, b in runs.items() if parse_name(n)[0] == kernel),
            key=lambda nb: case_key(parse_name(nb[0])[1]),
        )
        if not cases:
            continue
        with_layers = kernel == "fold"
        out.append(f"## {kernel}: {title}")
        out.append("")
        head = ["shape", "state", "B", "T"] + (["L"] if with_layers else [])
        with_gpu = any("gpu_us" in b for _, b in cases)
        with_copy = any("copy_us" in b for _, b in cases)
        head += ["time_us", "host_us"] + (["gpu_us"] if with_gpu else [])
        head += ["copy_us"] if with_copy else []
        head += ["GB/s", "TFLOP/s", "bw_frac %", "roofline_frac %"]
        out.append("| " + " | ".join(head) + " |")
        numeric = 6 + int(with_gpu) + int(with_copy)
        align = ["---"] * (5 if with_layers else 4) + ["---:"] * numeric
        out.append("|" + "|".join(align) + "|")
        for name, b in cases:
            _, f = parse_name(name)
            cells = [f.get("shape", ""), f.get("state", ""), f.get("B", ""), f.get("T", "")]
            if with_layers:
                cells.append(f.get("L", ""))
            if b.get("error_occurred"):
                cells += [f"error: {b.get('error_message', '')}"] + [""] * (numeric - 1)
            else:
                cells += [fmt_num(time_us(b), 1), fmt_num(b.get("host_us"), 1)]
                if with_gpu:
                    cells.append(fmt_num(b.get("gpu_us"), 1))
                if with_copy:
                    cells.append(fmt_num(b.get("copy_us"), 1))
                cells += [
                    fmt_num(b.get("GB/s"), 1),
                    fmt_num(b.get("TFLOP/s"), 3),
                    fmt_num(100.0 * b["bw_frac"] if "bw_frac" in b else None, 1),
                    fmt_num(100.0 * b["roofline_frac"] if "roofline_frac" in b else None, 1),
                ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: render.py IN.json OUT.md\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    text = render(data)
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
