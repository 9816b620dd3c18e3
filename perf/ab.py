#!/usr/bin/env python3
"""Compare two gdn_bench JSON files case by case (A-B of a variant, scripts/gpu_run.sh --variant).

usage: perf/ab.py A.json B.json [--field gpu_us] [--filter REGEX]

Takes each case's median (the `_median` aggregate with GDN_BENCH_REPETITIONS > 1, else
the one run) and prints A, B and B/A - 1 for the cases both files hold, in order of head
dim, state, batch and window.
"""
import argparse
import json
import re


def medians(path, field):
    runs, med = {}, {}
    for b in json.load(open(path))["benchmarks"]:
        name = b["run_name"].split("/iterations")[0]
        if b.get("aggregate_name") == "median":
            med[name] = b[field]
        elif b.get("run_type") != "aggregate":
            runs.setdefault(name, b[field])
    runs.update(med)
    return runs


def order(name):
    nums = [int(x) for x in re.findall(r"\d+", name)]
    return (name.split("/")[0], nums, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--field", default="gpu_us")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    a, b = medians(args.a, args.field), medians(args.b, args.field)
    rx = re.compile(args.filter)
    print(f"| case | A {args.field} | B {args.field} | B / A - 1 |")
    print("|---|---:|---:|---:|")
    for k in sorted(set(a) & set(b), key=order):
        if rx.search(k):
            print(f"| {k} | {a[k]:.1f} | {b[k]:.1f} | {100 * (b[k] / a[k] - 1):+.1f} % |")


if __name__ == "__main__":
    main()
