#!/usr/bin/env python3
"""perf/render.py (also --summary) and the profiling aids tools/profiling/targets.py,
tools/profiling/ab.py and tools/profiling/sass_breakdown.py on made-up inputs whose answers are
known (benchmark JSON; an ncu source CSV with its disassembly)."""
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
PROFILING = os.path.join(ROOT, "tools", "profiling")


def case(name, time_us, bytes_, gpu_us=None, flops=0.0, copy_bw=1e12, copy_us=None):
    b = {"name": name + "/iterations:1/manual_time_median",
         "run_name": name + "/iterations:1/manual_time", "run_type": "aggregate",
         "aggregate_name": "median", "time_us": time_us, "host_us": 3.0, "bytes": bytes_,
         "flops": flops, "GB/s": bytes_ / time_us * 1e-3, "TFLOP/s": 0.0}
    b["bw_frac"] = bytes_ / (time_us * 1e-6) / copy_bw
    b["roofline_frac"] = b["bw_frac"]
    if gpu_us is not None:
        b["gpu_us"] = gpu_us
    if copy_us is not None:
        b["copy_us"] = copy_us
        b["copy_ratio"] = copy_us / time_us
    return b


def mean_of(b):  # an aggregate that is not the median: must be ignored
    m = dict(b, aggregate_name="mean", name=b["name"].replace("_median", "_mean"))
    m["bw_frac"] = m["roofline_frac"] = 0.99
    return m


benchmarks = [
    # verify T = 2: roof 100 us, 50 % < 60 %: missed; need 166.7 us, bound 5 + 100 = 105;
    # a same-bytes copy of 120 us < need: no copy flag
    case("verify/D128/state:bf16/B:256/T:2", 200.0, 1e8, gpu_us=195.0, copy_us=120.0),
    # fold L = 1: roof 20 us, 66.7 % < 80 %: missed; need 25 us, bound 8 + 20 = 28 > 25;
    # copy 26 us > 25: both flags
    case("fold/D64/state:bf16/L:1/B:128/T:1", 30.0, 2e7, gpu_us=22.0, copy_us=26.0),
    # fwd decode: 80 % >= 75 %: met
    case("fwd/D128/state:float/B:256/T:1", 100.0, 8e7, gpu_us=95.0),
    # fwd T = 2 and B = 8 are no target cases
    case("fwd/D128/state:float/B:256/T:2", 1000.0, 1e6),
    case("verify/D128/state:float/B:8/T:1", 1000.0, 1e6),
    # no gpu_us: the context's launch floor (9 us); roof 10 us, need 12.5, bound 19 > 12.5
    case("fold/D64/state:float/L:36/B:512/T:8", 20.0, 1e7),
]
benchmarks.append(mean_of(benchmarks[0]))
data = {"context": {"copy_bw": "1e12", "fp32_peak": "1e15", "launch_floor_us": "9.0"},
        "benchmarks": benchmarks}

failures = []
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "b.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    out = subprocess.run([sys.executable, os.path.join(PROFILING, "targets.py"), path],
                         check=True, capture_output=True, text=True).stdout
    lines = {l.split()[0]: l for l in out.splitlines() if l.startswith(("verify", "fold", "fwd"))}
    if "targets met: 1 of 4" not in out:
        failures.append("tally: " + out.splitlines()[0])
    expect = {  # name: (need_us, bound_us, copy_us, bound flag, copy flag)
        "verify/D128/state:bf16/B:256/T:2": ("166.7", "105.0", "120.0", False, False),
        "fold/D64/state:bf16/L:1/B:128/T:1": ("25.0", "28.0", "26.0", True, True),
        "fold/D64/state:float/L:36/B:512/T:8": ("12.5", "19.0", "-", True, False),
    }
    if set(lines) != set(expect):
        failures.append(f"missed cases listed: {sorted(lines)}")
    for name, (need, bound, copy, bound_flag, copy_flag) in expect.items():
        line = lines.get(name, "")
        cols = line.split()
        if (len(cols) < 7 or cols[4] != need or cols[5] != bound or cols[6] != copy or
                ("bound > need" in line) != bound_flag or ("copy > need" in line) != copy_flag):
            failures.append(f"{name}: {line!r}, expected need {need} bound {bound} copy {copy}")

    md = os.path.join(tmp, "b.md")
    subprocess.run([sys.executable, os.path.join(ROOT, "perf", "render.py"), path, md], check=True)
    text = open(md, encoding="utf-8").read()
    if "| time_us | host_us | gpu_us |" not in text or "| 195.0 |" not in text:
        failures.append("render.py: no gpu_us column with gpu_us in the JSON")
    if "| copy_us |" not in text or "| 120.0 |" not in text:
        failures.append("render.py: no copy_us column with copy_us in the JSON")
    for b in data["benchmarks"]:
        b.pop("gpu_us", None)
        b.pop("copy_us", None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    subprocess.run([sys.executable, os.path.join(ROOT, "perf", "render.py"), path, md], check=True)
    text = open(md, encoding="utf-8").read()
    if "gpu_us" in text:
        failures.append("render.py: a gpu_us column or note without gpu_us in the JSON")
    if "copy_us" in text:
        failures.append("render.py: a copy_us column or note without copy_us in the JSON")

# perf/render.py --summary: the short tables of docs/performance.md, written between the markers
# of the JSON's file name and nowhere else. On an "H200" the verify table quotes the reference
# kernel: 355 us against 177.5 us is 2.00x. Roofline 100 us (1e8 bytes at 1e12 B/s).
summary_cases = [
    case("verify/D128/state:float/B:256/T:4", 177.5, 1e8),
    case("verify/D128/state:float/B:128/T:4", 1.0, 1e8),  # not the headline batch: left out
    case("fwd/D128/state:bf16/B:256/T:1", 125.0, 1e8),
    case("fold/D128/state:float/L:36/B:256/T:2", 1250.0, 1e9),
]
summary_data = {"context": {"copy_bw": "1e12", "fp32_peak": "1e15", "device": "NVIDIA H200",
                            "backend": "Cuda"}, "benchmarks": summary_cases}
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "bench_x.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(summary_data, f)
    page = os.path.join(tmp, "page.md")
    before = "# page\n\nintro\n\n<!-- generated from bench_x.json by perf/report.sh: begin -->\n"
    after = "<!-- generated from bench_x.json: end -->\n\noutro\n"
    with open(page, "w", encoding="utf-8") as f:
        f.write(before + "stale\n" + after)
    render_py = os.path.join(ROOT, "perf", "render.py")
    for _ in range(2):  # a second run replaces its own block
        subprocess.run([sys.executable, render_py, "--summary", path, page], check=True)
    text = open(page, encoding="utf-8").read()
    rows = [l.replace(" ", "") for l in text.splitlines()]
    if not (text.startswith(before) and text.endswith(after)) or "stale" in text:
        failures.append("render.py --summary: text outside the markers changed, or the block "
                        "was not replaced:\n" + text)
    if text.count("**verify**") != 1:
        failures.append("render.py --summary: not one verify table after two runs")
    for want in ("|float|4|177.5|100.0|56.3%|355|2.00x|", "|bf16|125.0|100.0|80.0%|",
                 "|float|36|1250us,80.0%|"):
        if want not in rows:
            failures.append(f"render.py --summary: no row {want}:\n{text}")
    if any(r.startswith("|float|4|1.0|") for r in rows):
        failures.append("render.py --summary: a case outside B = 256 in the tables")
    with open(page, "w", encoding="utf-8") as f:
        f.write("# a page without markers\n")
    r = subprocess.run([sys.executable, render_py, "--summary", path, page],
                       capture_output=True, text=True)
    if r.returncode == 0 or "no block marked" not in r.stderr:
        failures.append("render.py --summary: a page without markers was not refused")

# tools/profiling/ab.py: three labelled runs against the second (--ref), with each run's fraction
# of the roofline (--frac; 1e8 bytes at 1e12 B/s: 100 us); a case the third run lacks has empty
# cells. Two files without options: the A-B table.
ab_runs = {
    "new": [case("verify/D128/state:float/B:256/T:1", 100.0, 1e8),
            case("verify/D128/state:bf16/B:256/T:1/act:bf16", 50.0, 1e8)],
    "main": [case("verify/D128/state:float/B:256/T:1", 125.0, 1e8),
             case("verify/D128/state:bf16/B:256/T:1/act:bf16", 40.0, 1e8)],
    "0.1.0": [case("verify/D128/state:float/B:256/T:1", 200.0, 1e8)],
}
with tempfile.TemporaryDirectory() as tmp:
    args = []
    for label, cases in ab_runs.items():
        path = os.path.join(tmp, f"bench_{label}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"context": {"copy_bw": "1e12", "fp32_peak": "1e15"}, "benchmarks": cases}, f)
        args.append(f"{label}={path}")
    ab_py = os.path.join(PROFILING, "ab.py")
    out = subprocess.run([sys.executable, ab_py, *args, "--field", "time_us", "--ref", "main",
                          "--frac"], check=True, capture_output=True, text=True).stdout
    rows = [l.replace(" ", "") for l in out.splitlines()]
    for want in ("|case|newtime_us|newofroofline|maintime_us|mainofroofline|0.1.0time_us|"
                 "0.1.0ofroofline|new/main-1|0.1.0/main-1|",
                 "|verify/D128/state:float/B:256/T:1|100.0|100.0%|125.0|80.0%|200.0|50.0%|"
                 "-20.0%|+60.0%|",
                 "|verify/D128/state:bf16/B:256/T:1/act:bf16|50.0|200.0%|40.0|250.0%|||+25.0%||"):
        if want not in rows:
            failures.append(f"ab.py: no row {want}:\n{out}")
    out = subprocess.run([sys.executable, ab_py, args[1].split("=", 1)[1],
                          args[2].split("=", 1)[1], "--field", "time_us"],
                         check=True, capture_output=True, text=True).stdout
    if out.splitlines() != ["| case | A time_us | B time_us | B / A - 1 |", "|---|---:|---:|---:|",
                            "| verify/D128/state:float/B:256/T:1 | 125.0 | 200.0 | +60.0 % |"]:
        failures.append(f"ab.py: the A-B table of two files:\n{out}")

# tools/profiling/sass_breakdown.py --lines: five instructions, 10 work items. The disassembly
# (nvdisasm -gi form) puts each under its chain of inlined calls; ncu's CSV writes branch targets
# as addresses, memory operands with a descriptor and other spacing. Per item: the launch's own
# LDC 1, line 10 4, line 20 (inlined token_step.hpp:31) 3, line 30 (a View access and a branch)
# 2, of 10.
LAUNCH = ("Kokkos_Cuda_KernelLaunch.hpp", 129)
RK = "include/gdn/impl/recurrence_kernel.hpp"


def frame(at, *chain):  # an nvdisasm -gi line: chain[0] inlined at chain[1] (or at `at`)
    here, there = chain[0], (chain[1] if len(chain) > 1 else at)
    return '\t//## File "/s/%s", line %d inlined at "/s/%s", line %d\n' % (here + there)


def ins(offset, text):
    return "        /*%04x*/                   %s ;\n" % (offset, text)


SASS = (".text._Z6kernelv:\n" + '\t//## File "/s/%s", line %d\n' % LAUNCH +
        ins(0x00, "LDC R1, c[0x0][0x28]") + frame(LAUNCH, (RK, 10)) +
        ins(0x10, "FFMA R2, R3, R4, R2") +
        frame(LAUNCH, ("include/gdn/impl/token_step.hpp", 31), (RK, 20)) +
        frame(LAUNCH, (RK, 20)) + ins(0x20, "FMUL R5, R6, R7") +
        frame(LAUNCH, ("Kokkos_View.hpp", 952), (RK, 30)) + frame(LAUNCH, (RK, 30)) +
        ins(0x30, "LDG.E R8, [R10.64]") + "        /*0040*/              @!P0 BRA `(.L_x_1) ;\n")
PROFILE = [("LDC R1, c[0x0][0x28]", 10), ("FFMA R2, R3, R4, R2", 40), ("FMUL R5, R6, R7", 30),
           ("LDG.E R8, desc[UR4][R10.64]", 10), ("@!P0  BRA 0x7f0000000000", 10)]


def breakdown(tmp, profile, depth):
    sass = os.path.join(tmp, "sass.txt")
    with open(sass, "w", encoding="utf-8") as f:
        f.write(SASS)
    path = os.path.join(tmp, "prof.csv.gz")
    with gzip.open(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "kernel"])
        w.writerow(["Address", "Source", "Warp Stall Sampling (All Samples)",
                    "Instructions Executed"])
        for i, (text, n) in enumerate(profile):
            w.writerow(["0x%x" % (0x7F0000000000 + 16 * i), "      " + text, "0", str(n)])
    return subprocess.run([sys.executable, os.path.join(PROFILING, "sass_breakdown.py"), path,
                           "--items", "10", "--lines", sass, "--depth", str(depth)],
                          check=True, capture_output=True, text=True).stdout


def per_item(out):  # {source key: instructions per item} of the "by source" list
    got = {}
    if "by source" not in out:  # the report refused the disassembly
        return got
    for line in out.split("by source")[1].split("innermost")[0].splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4 and cols[2] == "%":
            got[cols[3]] = float(cols[0])
    return got


with tempfile.TemporaryDirectory() as tmp:
    out = breakdown(tmp, PROFILE, 0)
    if "5 of its 5 instructions match the profile's 5" not in out:
        failures.append("sass_breakdown --lines: match line: " + out[-300:])
    want = {"(outside": 1.0, "recurrence_kernel.hpp:10": 4.0, "recurrence_kernel.hpp:20": 3.0,
            "recurrence_kernel.hpp:30": 2.0}
    if per_item(out) != want:
        failures.append(f"sass_breakdown --lines: by source {per_item(out)}, expected {want}")
    # Kokkos's own: the View access (2) and the launch's LDC (1)
    if "innermost source in Kokkos: 3.0 per item (30.0 %)" not in out:
        failures.append("sass_breakdown --lines: Kokkos share: " + out[-300:])
    deep = [l.split() for l in breakdown(tmp, PROFILE, 1).splitlines()]
    if not any(c[:6] == ["3.0", "30.0", "%", "recurrence_kernel.hpp:20", ">", "token_step.hpp:31"]
               for c in deep):
        failures.append("sass_breakdown --lines --depth 1: no 3.0 for line 20 > token_step.hpp:31")
    other = [("FADD R2, R3, R4, R2", n) if t.startswith("FFMA") else (t, n) for t, n in PROFILE]
    if "too many differ" not in breakdown(tmp, other, 0):
        failures.append("sass_breakdown --lines: other code (an FADD for the FFMA) not refused")

for f in failures:
    print("FAIL:", f)
print("perf tools:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
