#!/usr/bin/env python3
"""Compare two gdn_bench JSON files case by case (A-B of a variant, scripts/gpu_run.sh --variant).

usage: perf/ab.py A.json B.json [--field gpu_us] [--filter REGEX]

Takes each case's median (or its one run: render.py's select_runs) and prints A, B and
B/A - 1 for the cases both files hold, in render.py's case order.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render import case_key, parse_name, select_runs  # noqa: E402  (the runs render.py reads)


def load(path, field):
    with open(path, encoding="utf-8") as f:
        runs = select_runs(json.load(f).get("benchmarks", []))
    return {name: float(b[field]) for name, b in runs.items() if field in b}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--field", default="gpu_us")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    a, b = load(args.a, args.field), load(args.b, args.field)
    rx = re.compile(args.filter)
    print(f"| case | A {args.field} | B {args.field} | B / A - 1 |")
    print("|---|---:|---:|---:|")
    cases = [k for k in set(a) & set(b) if rx.search(k)]
    for k in sorted(cases, key=lambda n: (parse_name(n)[0], case_key(parse_name(n)[1]))):
        print(f"| {k} | {a[k]:.1f} | {b[k]:.1f} | {100 * (b[k] / a[k] - 1):+.1f} % |")


if __name__ == "__main__":
    main()
