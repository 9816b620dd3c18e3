#!/usr/bin/env python3
"""Plot gdn_bench results against the roofline, as PNG files for docs/performance.md.

usage: perf/plot.py IN.json OUTDIR

Writes two figures, NAME being IN.json's file name without `bench_` and `.json`
(bench_cuda.json -> cuda):
  OUTDIR/NAME_time_vs_T.png  time per call against the window T: verify, the
                             forward (T tokens per sequence; T = 1 is decode)
                             and the fold (L = 1, n = T accepted), at the
                             shape and batch of docs/performance.md's tables;
  OUTDIR/NAME_time_vs_B.png  time per call against the batch B (log-log):
                             verify at T = 4, forward decode, fold at L = 1,
                             n = 4.
Each measured line (the median fenced time, as in the tables) has its roofline
beside it, dashed: max(bytes / copy_bw, flops / fp32_peak) of the same cases,
with copy_bw and fp32_peak measured in the same run; it is bytes / copy_bw
wherever the case is memory-bound. The B plot also marks the time of an empty
kernel timed like the cases (the launch floor), which bounds the small
batches.

Needs matplotlib (Debian: python3-matplotlib; perf/report.sh installs it).
The case selection and the runs read are perf/render.py's.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render import headline, indexed_runs, roofline_us, time_us  # noqa: E402

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator, ScalarFormatter
except ImportError:
    sys.stderr.write("plot.py: needs matplotlib (apt-get install python3-matplotlib, or run "
                     "bash perf/report.sh, which installs it)\n")
    sys.exit(1)

COLORS = {"float": "tab:blue", "bf16": "tab:orange"}
STATES = ("float", "bf16")


def series(runs, ctx, kernel, shape, state, fixed, axis):
    """[(x, time_us, roofline_us)] of the cases of one kernel and state, varying `axis`
    ('B' or 'T') with the other keys held at `fixed` {'B', 'T', 'L'}."""
    pos = {"B": 3, "T": 4}[axis]
    points = []
    for key, (_, b) in runs.items():
        if key[0] != kernel or key[1] != shape or key[2] != state:
            continue
        want = dict(fixed)
        got = {"B": key[3], "T": key[4], "L": key[5]}
        if all(got[k] == v for k, v in want.items() if k != axis):
            points.append((key[pos], time_us(b), roofline_us(b, ctx)))
    return sorted(points)


def panel(ax, runs, ctx, kernel, shape, fixed, axis, title, log_y):
    drawn = False
    for state in STATES:
        pts = series(runs, ctx, kernel, shape, state, fixed, axis)
        if not pts:
            continue
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], "o-", color=COLORS[state], label=f"{state} state")
        ax.plot(xs, [p[2] for p in pts], "--", color=COLORS[state], alpha=0.8,
                label=f"{state}: roofline")
        drawn = True
    ax.set_title(title, fontsize=10)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(axis if axis == "B" else "T (tokens per sequence)")
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    if drawn:
        xs = sorted({p[0] for s in STATES for p in series(runs, ctx, kernel, shape, s, fixed,
                                                           axis)})
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(ScalarFormatter())
    else:
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    return drawn


def figure(panels, suptitle, path, floor=None):
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.9))
    for ax, draw in zip(axes, panels):
        draw(ax)
        if floor is not None:
            ax.axhline(floor, color="gray", linestyle=":", linewidth=1.2,
                       label=f"empty kernel ({floor:.1f} us)")
    axes[0].set_ylabel("time per call (us)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9,
               frameon=False)
    fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    ctx = data.get("context", {})
    runs = indexed_runs(data)
    if not runs:
        sys.stderr.write(f"plot.py: no cases in {argv[1]}\n")
        return 1
    shape, batch = headline(runs)
    name = os.path.basename(argv[1])
    name = name[len("bench_"):] if name.startswith("bench_") else name
    name = name[:-len(".json")] if name.endswith(".json") else name
    os.makedirs(argv[2], exist_ok=True)
    where = f"{ctx.get('device', '?')} ({ctx.get('backend', '?')}), {shape}"

    t_path = os.path.join(argv[2], f"{name}_time_vs_T.png")
    figure([
        lambda ax: panel(ax, runs, ctx, "verify", shape, {"B": batch}, "T",
                         "verify (RING_LEN = T)", False),
        lambda ax: panel(ax, runs, ctx, "fwd", shape, {"B": batch}, "T",
                         "forward (T = 1: decode)", False),
        lambda ax: panel(ax, runs, ctx, "fold", shape, {"B": batch, "L": 1}, "T",
                         "fold (L = 1, n = T accepted)", False),
    ], f"{where}, B = {batch}: time per call against the window", t_path)

    b_path = os.path.join(argv[2], f"{name}_time_vs_B.png")
    floor = float(ctx["launch_floor_us"]) if "launch_floor_us" in ctx else None
    figure([
        lambda ax: panel(ax, runs, ctx, "verify", shape, {"T": 4}, "B", "verify, T = 4", True),
        lambda ax: panel(ax, runs, ctx, "fwd", shape, {"T": 1}, "B", "forward decode (T = 1)",
                         True),
        lambda ax: panel(ax, runs, ctx, "fold", shape, {"T": 4, "L": 1}, "B",
                         "fold, L = 1, n = 4", True),
    ], f"{where}: time per call against the batch", b_path, floor)
    print(t_path)
    print(b_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
