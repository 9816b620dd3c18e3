#!/usr/bin/env python3
"""Compare gdn_bench JSON files case by case (scripts/gpu_run.sh --baseline: this tree and earlier
commits measured in the same call).

usage: tools/profiling/ab.py [LABEL=]RUN.json [LABEL=]RUN.json ... [--field gpu_us]
                             [--filter REGEX] [--ref LABEL] [--frac]

Takes each case's median (or its one run: render.py's select_runs) and prints, in render.py's
case order, one row per case that the reference run (--ref, default the first) and at least one
other run hold with FIELD: each run's FIELD and, for every run but the reference, X / REF - 1
(an empty cell where a run lacks the case or the field). Runs are labelled A, B, C, ... unless
given as LABEL=RUN.json. Two unlabelled files without --frac give the A-B table: A, B and
B / A - 1 for the cases both hold.

--frac adds each run's fraction of the roofline at FIELD: max(bytes / copy_bw, flops /
fp32_peak) / FIELD, with the copy_bw and fp32_peak that the run measured itself (its
roofline_frac when FIELD is time_us), and a line per run with those two figures first.
"""
import argparse
import json
import os
import re
import sys

# perf/render.py, two folders up: the names, runs and roofline the benchmark pages use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from render import (case_key, fmt_si, parse_name, roofline_us,  # noqa: E402  (render.py's runs)
                    select_runs)


class Run:
    def __init__(self, label, path):
        self.label, self.path = label, path
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        self.ctx = data.get("context", {})
        self.cases = select_runs(data.get("benchmarks", []))

    def value(self, name, field):
        b = self.cases.get(name)
        return float(b[field]) if b is not None and field in b else None

    def frac(self, name, field):
        t, b = self.value(name, field), self.cases.get(name)
        if not t or "bytes" not in b or "copy_bw" not in self.ctx:
            return None
        return roofline_us(b, self.ctx) / t


def parse_runs(args):
    """[LABEL=]PATH arguments -> Runs; an argument that names a file is a path, '=' or not."""
    runs = []
    for i, arg in enumerate(args):
        label, path = chr(ord("A") + i) if i < 26 else f"run{i + 1}", arg
        m = re.match(r"([^=/]+)=(.+)$", arg)
        if m and not os.path.isfile(arg):
            label, path = m.group(1), m.group(2)
        runs.append(Run(label, path))
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"ab.py: a label given twice: {labels}")
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", metavar="[LABEL=]RUN.json")
    ap.add_argument("--field", default="gpu_us")
    ap.add_argument("--filter", default="")
    ap.add_argument("--ref", default=None, help="the run the others are compared with")
    ap.add_argument("--frac", action="store_true", help="each run's fraction of the roofline")
    args = ap.parse_args()
    if len(args.runs) < 2:
        ap.error("two or more runs")
    runs = parse_runs(args.runs)
    ref = next((r for r in runs if r.label == (args.ref or runs[0].label)), None)
    if ref is None:
        ap.error(f"--ref {args.ref}: no run labelled so ({', '.join(r.label for r in runs)})")
    others = [r for r in runs if r is not ref]
    rx = re.compile(args.filter)
    cases = [k for k in ref.cases if rx.search(k) and ref.value(k, args.field) is not None and
             any(r.value(k, args.field) is not None for r in others)]
    cases.sort(key=lambda n: (parse_name(n)[0], case_key(parse_name(n)[1])))

    if args.frac:
        for r in runs:
            bw, peak = r.ctx.get("copy_bw"), r.ctx.get("fp32_peak")
            line = f"{r.label}: {r.path}"
            if bw:
                line += f", copy_bw {fmt_si(bw, 'B/s')}"
            if peak:
                line += f", fp32_peak {fmt_si(peak, 'FLOP/s')}"
            print(line)
        print()
    head = ["case"]
    for r in runs:
        head.append(f"{r.label} {args.field}")
        if args.frac:
            head.append(f"{r.label} of roofline")
    head += [f"{r.label} / {ref.label} - 1" for r in others]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for k in cases:
        cells = [k]
        for r in runs:
            v = r.value(k, args.field)
            cells.append("" if v is None else f"{v:.1f}")
            if args.frac:
                f = r.frac(k, args.field)
                cells.append("" if f is None else f"{100 * f:.1f} %")
        base = ref.value(k, args.field)
        for r in others:
            v = r.value(k, args.field)
            cells.append("" if v is None or not base else f"{100 * (v / base - 1):+.1f} %")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
