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

  python3 tools/profiling/sass_breakdown.py ncu_source_sass.csv.gz [--items N] [--top K]
                                            [--lines SASS_GI [--depth D]]

--top K also lists the K instructions with the most stall samples.

--lines SASS_GI (the disassembly with source lines that tools/profiling/sass_lines.py
writes, of the same source): the profiled kernel is found in it (the
function whose instructions match the CSV's), every instruction is checked
to be the same one at the same offset (a mismatch beyond 2 % stops the
report), and the counts are then also summed (3) by source: by the call in
the kernel's body that the instruction comes from (D = 0, the default), or
D calls deeper (the chain of inlined calls; `file:line > file:line`), and
the warp stall samples (the warps' time) by the same sources, each with
its three leading stall reasons, and
(4) the instructions whose innermost source is Kokkos or a CUDA header,
by the gdn line that called into it (what the Kokkos abstraction costs
inside the kernel; CUDA headers are the intrinsics: shuffles, cp.async).
"""
import argparse
import collections
import csv
import gzip
import os
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
    ap.add_argument("--lines", help="nvdisasm -gi text of the same code (sass_lines.py)")
    ap.add_argument("--depth", type=int, default=0, help="--lines: calls below the kernel body")
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
    if a.lines:
        by_source(rows, a)


# --lines: the source of every instruction.
GDN_SOURCES = ("recurrence_kernel.hpp", "fold_kernel.hpp", "chunk_algebra.hpp", "backend.hpp",
               "params.hpp", "bf16.hpp",
               # the per-token kernels' files, for profiles of earlier builds
               "token_step.hpp", "mapping.hpp", "run_plan.hpp", "fast_div.hpp")
KERNEL_BODY = "Kokkos_Cuda_KernelLaunch.hpp"  # the frame that calls the functor


def normalized(text):
    """An instruction's text without what differs between ncu and nvdisasm."""
    text = re.sub(r"`\([^)]*\)|0x7[0-9a-f]{11}", "L", text)  # branch targets
    text = re.sub(r"desc\[UR\d+\]", "", text)  # memory descriptors
    text = text.replace(".reuse", "").replace(";", "")
    return " ".join(sorted(re.sub(r"[\[\],]", " ", text).split()))  # operand order varies


def disassembly(path):
    """{function: [(offset, text, [file:line, ...] innermost first)]} of nvdisasm -gi."""
    opener = gzip.open if path.endswith(".gz") else open
    funcs = {}
    cur = None
    chain = []
    fresh = True  # the next //## line starts a new chain
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith(".text."):
                cur = funcs.setdefault(line[6:].strip().rstrip(":"), [])
                continue
            if cur is None:
                continue
            if line.lstrip().startswith("//## File"):
                frames = ["%s:%s" % (p.split("/")[-1], n)
                          for p, n in re.findall(r'"([^"]+)", line (\d+)', line)]
                chain = frames if fresh else chain + frames[1:]
                fresh = False
                continue
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
            if m:
                cur.append((int(m.group(1), 16), m.group(2), list(chain)))
                fresh = True
    return funcs


def source_text(frame, cache={}):
    """The text of source line `file:line` of the library (what --lines names), shortened."""
    name, line = frame.rsplit(":", 1)
    if name not in cache:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "gdn")
        for d in (os.path.join(root, "impl"), root):
            if os.path.exists(os.path.join(d, name)):
                cache[name] = open(os.path.join(d, name)).read().split("\n")
                break
        else:
            cache[name] = []
    lines = cache[name]
    n = int(line)
    return " ".join(lines[n - 1].split())[:70] if 0 < n <= len(lines) else ""


def by_source(rows, a):
    head = rows[1]
    i_addr, i_src, i_n = (head.index(c) for c in ("Address", "Source", "Instructions Executed"))
    i_st = head.index("Warp Stall Sampling (All Samples)")
    reasons = [(i, c[len("stall_"):]) for i, c in enumerate(head)
               if c.startswith("stall_") and "Not Issued" not in c]
    prof = [r for r in rows[2:] if r[i_addr].startswith("0x")]
    base = int(prof[0][i_addr], 16)
    counted = {int(r[i_addr], 16) - base: (normalized(r[i_src]), int(r[i_n] or 0)) for r in prof}
    sampled = {int(r[i_addr], 16) - base:
               (int(r[i_st] or 0), [(name, int(r[i] or 0)) for i, name in reasons]) for r in prof}
    best = None
    for name, ins in disassembly(a.lines).items():
        matched = [(o, chain) for o, t, chain in ins
                   if o in counted and counted[o][0] == normalized(t)]
        if best is None or len(matched) > len(best[0]):
            best = (matched, name, ins)
    matched, name, ins = best
    same = len(matched)
    print("source lines (%s): kernel %s..., %d of its %d instructions match the profile's %d" %
          (a.lines, name[:90], same, len(ins), len(counted)))
    if same < 0.98 * len(ins):
        print("  too many differ: not the code that was profiled; no attribution")
        return
    by_line = collections.Counter()
    line_samples = collections.Counter()
    line_reasons = collections.defaultdict(collections.Counter)
    kokkos = collections.Counter()
    total = 0
    samples = 0
    for o, chain in matched:
        n = counted[o][1]
        total += n
        outer = list(reversed(chain))  # kernel body first
        if KERNEL_BODY in (outer[0] if outer else ""):
            outer = outer[1:]
        gdn = [c for c in outer if c.split(":")[0] in GDN_SOURCES]
        outside = "(outside gdn: %s)" % (chain[0] if chain else "?")
        key = " > ".join(gdn[: a.depth + 1]) if gdn else outside
        by_line[key] += n
        line_samples[key] += sampled[o][0]
        samples += sampled[o][0]
        for name, v in sampled[o][1]:
            line_reasons[key][name] += v
        inner = chain[0].split(":")[0] if chain else ""
        if inner.startswith("Kokkos") or inner.endswith(".h") or "intrinsics" in inner:
            caller = next((c for c in chain if c.split(":")[0] in GDN_SOURCES), "?")
            kind_of = "Kokkos" if inner.startswith("Kokkos") else "CUDA header"
            kokkos["%s %s <- %s" % (kind_of, inner, caller)] += n
    print("by source (per item, share; depth %d below the kernel body):" % a.depth)
    for key, n in by_line.most_common():
        if n / a.items >= 0.5:
            last = key.split(" > ")[-1]
            text = source_text(last) if ":" in last and not key.startswith("(") else ""
            print("  %7.1f  %5.1f %%  %s  %s" % (n / a.items, 100.0 * n / total, key, text))
    if samples:
        # Stall samples are taken at a fixed interval from every warp, so a
        # source's share of them is its share of the warps' time.
        print("by source, warp stall samples (share of %d; the leading reasons):" % samples)
        for key, v in line_samples.most_common():
            if v >= 0.005 * samples:
                r = line_reasons[key]
                rt = sum(r.values()) or 1
                lead = ", ".join("%s %.0f %%" % (k, 100.0 * x / rt) for k, x in r.most_common(3))
                print("  %5.1f %%  %s  (%s)" % (100.0 * v / samples, key, lead))
    k_all = sum(v for k, v in kokkos.items() if k.startswith("Kokkos"))
    h_all = sum(v for k, v in kokkos.items() if k.startswith("CUDA"))
    print("innermost source in Kokkos: %.1f per item (%.1f %%); in CUDA headers: %.1f (%.1f %%)" %
          (k_all / a.items, 100.0 * k_all / total, h_all / a.items, 100.0 * h_all / total))
    for key, n in kokkos.most_common():
        if n / a.items >= 0.5:
            print("  %7.1f  %s" % (n / a.items, key))


if __name__ == "__main__":
    main()
