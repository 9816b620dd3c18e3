#!/usr/bin/env python3
"""scripts/check_comments.py: fails on a planted history comment, passes on a clean file.

usage: test_check_comments.py REPO_ROOT
"""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
CHECK = os.path.join(ROOT, "scripts", "check_comments.py")

# Ordinary code and comments that must pass: modulo expressions, hex constants, words made of
# hex letters, history words inside string literals and code, and a measured choice stated as a
# short reason with a pointer.
CLEAN = r'''#include <cstdint>
/// \brief Row r of lane l: `(r/4)*4*lanes + 4*l + r%4`; item e at column group e % kCols.
// Narrowing keeps a NaN quiet (0x7fc0u); 0x7fffffffu masks the sign. Padding: 16 % 4 == 0.
// One team per work item, scheduled dynamically, which measured faster on the H200
// (docs/performance.md). The sums of a run of items share k and q (the same run).
/* A decade of defaced cafe: the words of a comment are not commit hashes. */
inline std::uint32_t mask() { return 0x7fffffffu; }
inline const char* label() { return "session 24, deadbee1, 158 us, 12 % slower"; }
inline int modulo(int a) { return a % 4 + 100 % 7; }  // the remainder
'''

# One history line per rule; the test names the line each must be reported at.
PLANTED = {
    3: "// Measured in the twenty-fourth session: kept.",
    4: "// Up to `ea77997` the last round was left partial.",
    5: "// B = 256: verify bf16 T = 4 from 245 us to 237 us.",
    6: "// 1.7 to 21.4 % slower on the H200, so off.",
    7: "/* same H200 call, medians of 3: -2.6 to -4.6 % */",
    8: "// fold L = 1 60 -> 65 (see docs/perf/history.md)",
}


def run(path):
    return subprocess.run([sys.executable, CHECK, path], capture_output=True, text=True)


failures = []
with tempfile.TemporaryDirectory() as tmp:
    clean = os.path.join(tmp, "clean.hpp")
    with open(clean, "w", encoding="utf-8") as f:
        f.write(CLEAN)
    r = run(clean)
    if r.returncode != 0:
        failures.append(f"a clean file was flagged (exit {r.returncode}):\n{r.stdout}{r.stderr}")

    planted = os.path.join(tmp, "planted.cpp")
    lines = CLEAN.splitlines()[:2] + [PLANTED[n] for n in sorted(PLANTED)] + ["int f();"]
    with open(planted, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    r = run(planted)
    if r.returncode != 1:
        failures.append(f"planted history: exit {r.returncode}, expected 1:\n{r.stdout}{r.stderr}")
    reported = {int(l.split(":")[1]) for l in r.stdout.splitlines() if l.startswith(planted)}
    if reported != set(PLANTED):
        failures.append(f"planted history: lines {sorted(reported)} reported, expected "
                        f"{sorted(PLANTED)}:\n{r.stdout}")

    # A directory is searched for C++ files; a planted comment in one of them fails the whole run.
    os.makedirs(os.path.join(tmp, "tree", "impl"))
    for name, text in (("a.hpp", CLEAN), ("impl/b.cpp", CLEAN + "// was 334.8 us\n")):
        with open(os.path.join(tmp, "tree", name), "w", encoding="utf-8") as f:
            f.write(text)
    r = run(os.path.join(tmp, "tree"))
    if r.returncode != 1 or "b.cpp:10:" not in r.stdout or "a.hpp" in r.stdout:
        failures.append(f"directory: exit {r.returncode}, expected 1 with b.cpp:10:\n{r.stdout}")

for f in failures:
    print("FAIL:", f)
print("check_comments:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
