#!/usr/bin/env python3
"""The first screen of docs/performance.md: every call on the GPU beside its anchors.

usage: perf/overview.py --gdn BENCH.json [--release NAME=BENCH.json] [--fla FLA.json]
                        PAGE.md [CHART.png]

One row per call and state type at Qwen3-Next's layer (D128) and B = 256 (prefill: B x T
prompts): gdn's fenced time (BENCH.json, gdn_bench) and its fraction of the case's
roofline, the same for an earlier release (--release: its gdn_bench JSON, best from
the same device call, gpu_run.sh --baseline; the line above the table says when it
was measured) and for fla's kernel of the same job where fla has
one (--fla, perf/fla_anchor.py; its fraction of the same roofline). The roofline is
max(bytes / copy_bw, flops / fp32_peak) with the case's bytes and FLOPs and the copy
bandwidth and FP32 peak measured in the same run (perf/render.py). The table goes into
PAGE.md between the lines

    <!-- overview: begin -->
    <!-- overview: end -->

and the chart (fraction of the roofline per row, matplotlib) into CHART.png.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render import replace_between, roofline_us, select_runs, time_us  # noqa: E402

# (call, gdn_bench case with {s} for the state type, fla_anchor.py case or None)
ROWS = [
    ("forward, decode", "fwd/D128/state:{s}/B:256/T:1", "fwd/B:256/T:1"),
    ("forward, 4 tokens", "fwd/D128/state:{s}/B:256/T:4", "fwd/B:256/T:4"),
    ("verify, window of 4", "verify/D128/state:{s}/B:256/T:4", None),
    ("fold, 4 accepted", "fold/D128/state:{s}/L:1/B:256/T:4", None),
    ("step, eager (verify + fold)", "step/D128/state:{s}/L:36/B:256/T:4/eager", None),
    ("step, lazy (verify + accept)", "step/D128/state:{s}/L:36/B:256/T:4/lazy", None),
    ("prefill 1 x 1024", "prefill/D128/state:{s}/B:1/T:1024", "prefill/B:1/T:1024"),
    ("prefill 1 x 4096", "prefill/D128/state:{s}/B:1/T:4096", "prefill/B:1/T:4096"),
    ("prefill 16 x 4096", "prefill/D128/state:{s}/B:16/T:4096", "prefill/B:16/T:4096"),
]
# The conv1d (bf16 activations, the engines' case; no state type).
CONV_ROWS = [
    ("conv1d forward, decode", "conv_fwd/D128/act:bf16/B:256/T:1"),
    ("conv1d verify, window of 4", "conv_verify/D128/act:bf16/B:256/T:4"),
]
STATES = ("float", "bf16")
BEGIN, END = "<!-- overview: begin -->", "<!-- overview: end -->"


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data.get("context", {}), select_runs(data.get("benchmarks", []))


def cell(runs, ctx, name):
    """(time, roofline) in us of case `name`, or None."""
    b = runs.get(name)
    if b is None or b.get("error_occurred"):
        return None
    return time_us(b), roofline_us(b, ctx)


def fmt_time(t):
    return f"{t:.1f}" if t < 1000 else f"{t:.0f}"


def table(gdn, release, fla):
    """Markdown lines and the chart's rows [(label, gdn frac, release frac, fla frac)]."""
    ctx, runs = gdn
    rel_name, rel = release if release else (None, None)
    head = ["call", "state", "gdn (us)", "of roofline"]
    if rel:
        head += [f"{rel_name} (us)", "of roofline"]
    if fla is not None:
        head += ["fla (us)", "of roofline"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    chart = []

    def add(call, state, name, fla_key):
        mine = cell(runs, ctx, name)
        if mine is None:
            return
        t, roof = mine
        row = [call, state, fmt_time(t), f"{100 * roof / t:.0f} %"]
        fr = [call + ("" if state == "-" else f", {state}"), roof / t, None, None]
        if rel:
            other = cell(rel[1], rel[0], name)
            row += [fmt_time(other[0]), f"{100 * other[1] / other[0]:.0f} %"] if other else ["", ""]
            fr[2] = other[1] / other[0] if other else None
        if fla is not None:
            f = fla.get(fla_key) if fla_key and state == "float" else None
            row += [fmt_time(f["time_us"]), f"{100 * roof / f['time_us']:.0f} %"] if f else ["", ""]
            fr[3] = roof / f["time_us"] if f else None
        lines.append("| " + " | ".join(row) + " |")
        chart.append(tuple(fr))

    for call, pattern, fla_key in ROWS:
        for state in STATES:
            add(call, state, pattern.format(s=state), fla_key)
    for call, name in CONV_ROWS:
        add(call, "-", name, None)
    return lines, chart


def draw(chart, path, columns):
    """A bar per (row, column) for columns [(label, index into a chart row)]."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("overview.py: no matplotlib, no chart\n")
        return
    n = len(chart)
    fig, ax = plt.subplots(figsize=(8, 0.32 * n + 1.2))
    width = 0.8 / len(columns)
    for k, (label, col) in enumerate(columns):
        ys = [i + (k - (len(columns) - 1) / 2) * width for i in range(n)]
        xs = [100 * (r[col] or 0) for r in chart]
        ax.barh(ys, xs, height=width, label=label)
    ax.set_yticks(range(n))
    ax.set_yticklabels([r[0] for r in chart], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of the roofline (%), higher is better")
    ax.axvline(100, color="gray", linewidth=0.8)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gdn", required=True, help="gdn_bench JSON of this tree")
    ap.add_argument("--release", help="NAME=gdn_bench JSON of an earlier release, same call")
    ap.add_argument("--fla", help="perf/fla_anchor.py JSON")
    ap.add_argument("page")
    ap.add_argument("chart", nargs="?")
    args = ap.parse_args()
    gdn = load(args.gdn)
    release = None
    if args.release:
        name, _, path = args.release.partition("=")
        release = (name, load(path))
    fla = None
    if args.fla:
        with open(args.fla, encoding="utf-8") as f:
            fla = json.load(f)
    lines, chart = table(gdn, release, fla)
    ctx = gdn[0]
    intro = (f"{ctx.get('device', '?')}, measured {str(ctx.get('date', '?'))[:10]}; in the "
             f"same run copy_bw {float(ctx['copy_bw']) / 1e12:.2f} TB/s and fp32_peak "
             f"{float(ctx['fp32_peak']) / 1e12:.1f} TFLOP/s.")
    if release:
        rctx = release[1][0]
        rdate = str(rctx.get("date", "?"))
        same = rdate[:13] == str(ctx.get("date", ""))[:13]
        intro += (f" {release[0]}: {rctx.get('device', '?')}, "
                  + ("the same device call" if same else f"measured {rdate[:16].replace('T', ' ')} "
                     "UTC in another device call")
                  + f", copy_bw {float(rctx['copy_bw']) / 1e12:.2f} TB/s.")
    with open(args.page, encoding="utf-8") as f:
        page = f.read()
    try:
        page = replace_between(page, BEGIN, END, [intro, ""] + lines)
    except ValueError as e:
        raise SystemExit(f"overview.py: {args.page}: {e}")
    with open(args.page, "w", encoding="utf-8") as f:
        f.write(page)
    if args.chart:
        columns = [("gdn", 1)] + ([(release[0], 2)] if release else [])
        columns += [("fla", 3)] if fla is not None else []
        draw(chart, args.chart, columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
