#!/usr/bin/env python3
"""Render gdn_bench's Google Benchmark JSON as markdown tables.

usage: perf/render.py IN.json OUT.md
       perf/render.py --summary IN.json PAGE.md

The first form writes every case: one table per kernel (fwd, verify, fold),
one row per case. The second writes the short tables of docs/performance.md
(verify, forward decode and fold at the Qwen3-Next shape and B = 256, or the
largest B measured) into PAGE.md, between the two marker lines

    <!-- generated from bench_NAME.json by perf/report.sh: begin -->
    <!-- generated from bench_NAME.json: end -->

where bench_NAME.json is IN.json's file name; the rest of PAGE.md is kept.
perf/report.sh runs both for every docs/perf/bench_*.json.

Case names are `kernel/D<d>/key:value/...` (perf/bench_gdn.cpp). With
--benchmark_repetitions the median aggregate is shown; otherwise the single
run of each case. Python 3 standard library only.
"""

import json
import os
import re
import sys

KERNELS = [
    ("fwd", "recurrence_fwd"),
    ("verify", "recurrence_verify_ring (RING_LEN = T, records written, state not written)"),
    ("fold", "state_fold (n = T accepted for every row, RING_LEN = T)"),
    ("prefill", "recurrence_fwd over B prompts of T tokens each"),
    ("prefill_tc", "recurrence_prefill (chunked, tensor cores on CUDA) over B prompts of T tokens "
                   "each"),
    ("step", "one layer's speculative step over 36 layers' pools: the lazy flow "
             "(recurrence_verify_lazy + lazy_accept) or the eager one (verify_ring + state_fold)"),
]


def parse_name(name):
    """'fold/D128/state:bf16/L:36/B:256/T:4/conv' -> ('fold', {'shape': 'D128', ...,
    'conv': 'yes'}): a key without a value (the fold's 'conv') is a flag."""
    parts = name.split("/")
    fields = {"shape": parts[1] if len(parts) > 1 else ""}
    for p in parts[2:]:
        if ":" in p:
            key, value = p.split(":", 1)
            fields[key] = value
        elif p and not p.startswith(("iterations", "manual_time", "repeats")):
            fields[p] = "yes"
    return parts[0], fields


def input_label(f):
    """'act:bf16' and 'gates:raw' fields -> 'bf16, raw gates'; the default reads 'float';
    the fold's 'conv' flag reads 'with conv pools', the prefill's 'fused' flag adds
    ', no workspace'."""
    if "conv" in f:
        return "with conv pools"
    if "lazy" in f or "eager" in f:
        return "lazy flow" if "lazy" in f else "eager flow"
    act = f.get("act", "float")
    return (act + (", raw gates" if f.get("gates") == "raw" else "")
            + (", no workspace" if "fused" in f else ""))


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
    L, then D128 before D64, float before bf16 state, float activations and given
    gates before the input variants (act:bf16, gates:raw), then B and T."""

    def num(key, default=0):
        try:
            return int(str(f.get(key, default)).lstrip("D"))
        except ValueError:
            return default

    return (num("L"), -num("shape"), f.get("state", "") != "float", f.get("act", ""),
            f.get("gates", ""), "conv" in f, "fused" in f, num("B"), num("T"))


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
        with_layers = kernel in ("fold", "step")
        out.append(f"## {kernel}: {title}")
        out.append("")
        with_inputs = any(k in parse_name(n)[1]
                          for n, _ in cases for k in ("act", "gates", "conv", "lazy", "eager", "fused"))
        head = ["shape", "state"] + (["inputs"] if with_inputs else []) + ["B", "T"]
        head += ["L"] if with_layers else []
        with_gpu = any("gpu_us" in b for _, b in cases)
        with_copy = any("copy_us" in b for _, b in cases)
        head += ["time_us", "host_us"] + (["gpu_us"] if with_gpu else [])
        head += ["copy_us"] if with_copy else []
        head += ["GB/s", "TFLOP/s", "bw_frac %", "roofline_frac %"]
        out.append("| " + " | ".join(head) + " |")
        numeric = 6 + int(with_gpu) + int(with_copy)
        align = ["---"] * (4 + int(with_layers) + int(with_inputs)) + ["---:"] * numeric
        out.append("|" + "|".join(align) + "|")
        for name, b in cases:
            _, f = parse_name(name)
            cells = [f.get("shape", ""), f.get("state", "")]
            if with_inputs:
                cells.append(input_label(f))
            cells += [f.get("B", ""), f.get("T", "")]
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


# --- the short tables of docs/performance.md --------------------------------------------------

# Times of other implementations of the same case on the same machine, shown beside gdn's.
# Keyed by a substring of the JSON context's "device", then by case name; each entry is
# (microseconds, where the figure comes from). The verify figures are issue 5's
# straightforward CUDA kernel, measured on the H200: one block per sequence and value
# head, one thread per value column holding its state column in registers.
REFERENCES = {
    "H200": {
        "verify/D128/state:float/B:256/T:1": 193.0,
        "verify/D128/state:float/B:256/T:4": 355.0,
        "verify/D128/state:float/B:256/T:8": 575.0,
        "verify/D128/state:bf16/B:256/T:4": 323.0,
    },
}
REFERENCE_NAME = "straightforward kernel"
REFERENCE_NOTE = (
    "*straightforward kernel*: a plain CUDA verify kernel measured on the same H200 "
    "(one block per sequence and value head, one thread per value column holding "
    "that column of the state in registers)."
)
HEADLINE_BATCH = 256  # the batch of the short tables (the largest measured, if smaller)


def _num(value):
    try:
        return int(str(value).lstrip("D"))
    except ValueError:
        return 0


def _si3(x, unit):
    """3 significant digits with an SI prefix: 3.99 TB/s, 41.9 GB/s, 458 GFLOP/s."""
    v = float(x)
    prefixes = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
    for scale, prefix in prefixes:
        if v >= scale:
            break
    return f"{v / scale:.3g} {prefix}{unit}"


def _us(t):
    return f"{t:.1f}" if t < 1000 else f"{t:.0f}"


def roofline_us(b, ctx):
    """max(bytes / copy_bw, flops / fp32_peak) in microseconds."""
    t = float(b["bytes"]) / float(ctx["copy_bw"])
    if "flops" in b and float(ctx.get("fp32_peak", 0)) > 0:
        t = max(t, float(b["flops"]) / float(ctx["fp32_peak"]))
    return 1e6 * t


def indexed_runs(data):
    """{(kernel, shape, state, B, T, L): (name, run)} of the cases without an error and with
    the default inputs (no act: or gates: field: float activations, given gates; the conv
    cases name their activations too; the fold without conv pools); L = 0 outside the fold."""
    runs = {}
    for name, b in select_runs(data.get("benchmarks", [])).items():
        if not b.get("error_occurred"):
            kernel, f = parse_name(name)
            if "act" in f or "gates" in f or "conv" in f:
                continue
            runs[(kernel, f.get("shape"), f.get("state"), _num(f.get("B")), _num(f.get("T")),
                  _num(f.get("L")))] = (name, b)
    return runs


def headline(runs):
    """The shape and batch of the short tables: D128 (else the largest), B = HEADLINE_BATCH
    (else the largest measured)."""
    shapes = sorted({k[1] for k in runs}, key=_num)
    shape = "D128" if "D128" in shapes else shapes[-1]
    batches = sorted({k[3] for k in runs if k[1] == shape})
    return shape, (HEADLINE_BATCH if HEADLINE_BATCH in batches else batches[-1])


def summary(data, references=None):
    """The short tables of docs/performance.md for one benchmark file (markdown lines)."""
    ctx = data.get("context", {})
    runs = indexed_runs(data)
    if not runs:
        return ["(no cases in this file)"]
    shape, batch = headline(runs)
    states = [s for s in ("float", "bf16") if any(k[2] == s for k in runs)]
    if references is None:
        device = str(ctx.get("device", ""))
        references = next((r for key, r in REFERENCES.items() if key in device), {})

    def cell(key):
        if key not in runs:
            return None
        name, b = runs[key]
        return name, time_us(b), roofline_us(b, ctx)

    floor = ctx.get("launch_floor_us")
    out = [
        f"{ctx.get('device', '?')}, {ctx.get('backend', '?')} backend (Kokkos "
        f"{ctx.get('kokkos_version', '?')}), measured {str(ctx.get('date', '?'))[:10]}. "
        f"In the same run: copy_bw {_si3(ctx['copy_bw'], 'B/s')}, fp32_peak "
        f"{_si3(ctx['fp32_peak'], 'FLOP/s')}"
        + (f", an empty kernel timed like the cases {float(floor):.1f} us" if floor else "")
        + f". Cases: {shape} (nk = 16, nv = 32, Dk = Dv = {_num(shape)}), B = {batch} "
        "sequences, float ring.",
        "",
    ]

    rows = []
    for state in states:
        for window in sorted({k[4] for k in runs if k[0] == "verify"}):
            c = cell(("verify", shape, state, batch, window, 0))
            if c is None:
                continue
            name, t, roof = c
            ref = references.get(name)
            rows.append([state, str(window), _us(t), _us(roof), f"{100 * roof / t:.1f} %"]
                        + ([f"{ref:.0f}", f"{ref / t:.2f}x"] if ref else ["", ""]))
    with_ref = any(r[5] for r in rows)
    if rows:
        out.append(f"**verify** (`recurrence_verify_ring`, a window of T tokens per sequence, "
                   "RING_LEN = T: outputs and records written, state not)")
        out.append("")
        head = ["state", "T", "time (us)", "roofline (us)", "of roofline"]
        head += [f"{REFERENCE_NAME} (us)", "its time / gdn's"] if with_ref else []
        out.append("| " + " | ".join(head) + " |")
        out.append("|---|---:|" + "---:|" * (len(head) - 2))
        out += ["| " + " | ".join(r if with_ref else r[:5]) + " |" for r in rows]
        out.append("")

    rows = []
    for state in states:
        c = cell(("fwd", shape, state, batch, 1, 0))
        if c is not None:
            _, t, roof = c
            rows.append(f"| {state} | {_us(t)} | {_us(roof)} | {100 * roof / t:.1f} % |")
    if rows:
        out.append("**forward decode** (`recurrence_fwd`, one token per sequence; "
                   "the state read and written)")
        out.append("")
        out.append("| state | time (us) | roofline (us) | of roofline |")
        out.append("|---|---:|---:|---:|")
        out += rows
        out.append("")

    windows = sorted({k[4] for k in runs if k[0] == "fold"})
    rows = []
    for state in states:
        for layers in sorted({k[5] for k in runs if k[0] == "fold"}):
            cells = []
            for window in windows:
                c = cell(("fold", shape, state, batch, window, layers))
                cells.append("" if c is None else f"{_us(c[1])} us, {100 * c[2] / c[1]:.1f} %")
            if any(cells):
                rows.append(f"| {state} | {layers} | " + " | ".join(cells) + " |")
    if rows:
        out.append("**fold** (`state_fold`, L layers in one call, n = T records accepted per "
                   "sequence; time and fraction of the roofline)")
        out.append("")
        out.append("| state | L | " + " | ".join(f"n = {w}" for w in windows) + " |")
        out.append("|---|---:|" + "---:|" * len(windows))
        out += rows
        out.append("")
    if with_ref:
        out.append(REFERENCE_NOTE)
        out.append("")
    while out and out[-1] == "":
        out.pop()
    return out


def replace_between(page, begin, end, lines):
    """PAGE with the text between the lines BEGIN and END replaced by LINES."""
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(page):
        raise ValueError(f"no block marked '{begin}' ... '{end}'")
    block = begin + "\n" + "\n".join(lines) + "\n" + end
    return pattern.sub(lambda _: block, page, count=1)


def replace_block(page, tag, lines):
    """PAGE with the text between the begin and end markers of TAG replaced by LINES."""
    return replace_between(page, f"<!-- generated from {tag} by perf/report.sh: begin -->",
                           f"<!-- generated from {tag}: end -->", lines)


def main(argv):
    if len(argv) == 4 and argv[1] == "--summary":
        with open(argv[2], encoding="utf-8") as f:
            data = json.load(f)
        with open(argv[3], encoding="utf-8") as f:
            page = f.read()
        try:
            page = replace_block(page, os.path.basename(argv[2]), summary(data))
        except ValueError as e:
            sys.stderr.write(f"render.py: {argv[3]}: {e}\n")
            return 1
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write(page)
        return 0
    if len(argv) != 3:
        sys.stderr.write("usage: render.py IN.json OUT.md | render.py --summary IN.json PAGE.md\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    text = render(data)
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
