#!/usr/bin/env python3
"""perf/targets.py and perf/render.py on a made-up benchmark JSON whose answers are known."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]


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
    out = subprocess.run([sys.executable, os.path.join(ROOT, "perf", "targets.py"), path],
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

for f in failures:
    print("FAIL:", f)
print("perf tools:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
