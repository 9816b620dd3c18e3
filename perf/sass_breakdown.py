#!/usr/bin/env python3
"""Where a kernel's instructions go, from ncu's per-instruction SASS counters.

Input: the CSV that `scripts/gpu_run.sh --ncu RE` writes as
ncu_source_sass.csv.gz (`ncu --import R --page source --csv --print-source
sass`). Each SASS instruction's warp-level execution count is divided by the
number of work items a warp runs (`--items`, 65536 for the D128 verify at
B = 256: 256 sequences x 32 value heads x 2 tiles x 4 warps), then summed
(1) by kind of instruction and (2) by how often it ran per item: an
instruction that ran exactly k times per item (k >= 1) is in band "x k"
(k = the tokens of a window that run it), one that ran about once in band
"~1" (item bookkeeping, whose count depends on the run plan), the rest in
"<1" (work that only some items do: record keys, the end of a run, ...).

  python3 perf/sass_breakdown.py ncu_source_sass.csv.gz [--items N] [--top K]

--top K also lists the K instructions with the most stall samples.
"""
import argparse
import collections
import csv
import gzip
import re

FP32 = {"FFMA", "FMUL", "FADD", "FSEL", "FMNMX", "MUFU", "FSETP", "FCHK"}
GLOBAL = {"LDG", "STG", "LDGSTS", "LDGDEPBAR", "DEPBAR", "CCTL", "LD", "ST", "RED", "ATOM"}
CONTROL = {"BRA", "BSSY", "BSYNC", "BAR", "NOP", "EXIT", "WARPSYNC", "CALL", "RET", "BMOV"}


def kind(sass):
    """The kind of one SASS instruction (its text without the predicate)."""
    text = re.sub(r"^@!?U?P\w+\s+", "", sass)
    op = text.split()[0] if text else ""
    base = op.split(".")[0]
    if base in FP32:
        return "fp32 math"
    # bf16 -> float: the low half shifted up 16 bits, the high half masked.
    if (base == "IMAD" and ".U32" in op and "0x10000" in text) or \
       (base == "SHF" and ", 0x10, RZ" in text) or \
       (base == "LOP3" and "0xffff0000" in text) or base == "PRMT":
        return "bf16 conversion"
    if base in ("LDS", "STS"):
        return "shared load/store"
    if base in GLOBAL:
        return "global / async copy"
    if base == "SHFL":
        return "shuffle"
    if base.startswith("U") or base in ("R2UR", "S2UR", "LDC"):
        return "uniform / constant"
    if base in CONTROL:
        return "branch / barrier"
    return "integer, address, move, predicate"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv_gz")
    ap.add_argument("--items", type=int, default=65536, help="work items x warps per item")
    ap.add_argument("--top", type=int, default=0, help="list the K most stalled instructions")
    a = ap.parse_args()
    with gzip.open(a.csv_gz, "rt") as f:
        rows = list(csv.reader(f))
    head = rows[1]
    i_n = head.index("Instructions Executed")
    i_src = head.index("Source")
    i_st = head.index("Warp Stall Sampling (All Samples)")
    by_kind = collections.Counter()
    by_band = collections.defaultdict(collections.Counter)
    stalls = []
    total = 0
    samples = 0
    for r in rows[2:]:
        try:
            n = int(r[i_n])
        except ValueError:
            continue
        src = r[i_src].strip()
        k = kind(src)
        per = n / a.items
        if per >= 0.999 and abs(per - round(per)) < 0.002:
            band = "x%d" % round(per)
        elif 0.9 < per < 1.3:
            band = "~1"
        else:
            band = "<1"
        by_kind[k] += n
        by_band[band][k] += n
        total += n
        s = int(r[i_st] or 0)
        samples += s
        stalls.append((s, per, src))
    print("%s: %d warp instructions, %.0f per item" % (a.csv_gz, total, total / a.items))
    print("by kind (per item, share):")
    for k, n in by_kind.most_common():
        print("  %-34s %7.1f  %5.1f %%" % (k, n / a.items, 100.0 * n / total))
    print("by how often an instruction ran per item:")
    for band in sorted(by_band, key=lambda b: (b[0] != "x", b)):
        c = by_band[band]
        t = sum(c.values())
        parts = ", ".join("%s %.0f" % (k, v / a.items) for k, v in c.most_common())
        print("  %-4s %7.1f per item: %s" % (band, t / a.items, parts))
    if a.top:
        print("most stalled instructions (%d samples in all):" % samples)
        for s, per, src in sorted(stalls, reverse=True)[: a.top]:
            print("  %5.1f %%  x%.3f  %s" % (100.0 * s / max(samples, 1), per, src))


if __name__ == "__main__":
    main()
