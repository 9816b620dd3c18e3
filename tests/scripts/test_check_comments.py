#!/usr/bin/env python3
"""scripts/check_comments.py: fails on a planted history comment, passes on a clean file; fails
on a file name that names no file of the tree (in a C++ comment or a Markdown file), passes on
names that do and on what is no file name of the tree (URLs, patterns, output folders).

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


def run(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# The file rule, in a tree of its own (--root): the files it has, then a C++ file and two
# Markdown files that name files. Every name in OK_* is found (or is no file name of the tree);
# every (line, name) in BAD_* must be reported, and nothing else.
TREE = ["include/gdn/config.hpp", "include/gdn/impl/launch.hpp", "docs/design.md",
        "cmake/GDNConfig.cmake.in", "tests/reference/reference.hpp", "tools/profiling/ab.py",
        "perf/render.py", "README.md"]
CPP = r'''// The head geometry (gdn/config.hpp, impl/launch.hpp, docs/design.md section 2).
// The installed GDNConfig.cmake; the reference of reference.hpp; perf/render.py's names.
// fla's chunk_delta_h.py (https://github.com/fla-org/x/blob/main/fla/ops/missing_url.py).
// Patterns and outputs: bench_*.json, bench_NAME.json, $OUT/ab.txt, <name>.md,
// build/cuda/compile_commands.json, /usr/include/python3.11/Python.hpp.
const char* s = "missing_in_a_string.hpp";  // code and string literals are not read
// Gone: host_dense.hpp, and perf/ab.py (moved to tools/), ../shared/DEPS.md.
/* A block comment: docs/missing.md
   and SPEC.md. */
int f();
'''
BAD_CPP = {(7, "host_dense.hpp"), (7, "perf/ab.py"), (7, "../shared/DEPS.md"),
           (8, "docs/missing.md"), (9, "SPEC.md")}
MD = """# A page in docs/

[The design](design.md), [the config](../include/gdn/config.hpp), `tools/profiling/ab.py`.
See [the spec](../SPEC.md) and `DEPS.md`.
```bash
python3 perf/ab.py out/bench_cuda.json
```
"""
BAD_MD = {(4, "../SPEC.md"), (4, "DEPS.md"), (6, "perf/ab.py")}


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

def file_hits(r):
    """(file's name, line, name) of every [file] line of a run."""
    hits = set()
    for line in r.stdout.splitlines():
        if ": [file] " in line:
            where, name = line.split(": [file] ")
            path, number = where.rsplit(":", 1)
            hits.add((os.path.basename(path), int(number), name))
    return hits


with tempfile.TemporaryDirectory() as tmp:
    for name in TREE:
        write(os.path.join(tmp, name), "\n")
    cpp, md = os.path.join(tmp, "src", "names.cpp"), os.path.join(tmp, "docs", "page.md")
    write(cpp, CPP)
    write(md, MD)
    changelog = os.path.join(tmp, "CHANGELOG.md")
    write(changelog, "- Removed old_name.hpp.\n")  # exempt: it describes history
    r = run("--root", tmp, tmp)  # the whole tree, walked
    expected = ({("names.cpp", n, name) for n, name in BAD_CPP}
                | {("page.md", n, name) for n, name in BAD_MD})
    if r.returncode != 1 or file_hits(r) != expected:
        failures.append(f"file names: exit {r.returncode}, expected 1; reported beyond "
                        f"{sorted(file_hits(r) - expected)}, missed "
                        f"{sorted(expected - file_hits(r))}:\n{r.stdout}{r.stderr}")
    # Once the files exist (a bare name anywhere in the tree), only the path out of the tree
    # is left.
    for name in ("x/host_dense.hpp", "perf/ab.py", "docs/missing.md", "SPEC.md", "y/DEPS.md"):
        write(os.path.join(tmp, name), "\n")
    r = run("--root", tmp, cpp, md, changelog)  # the files, named
    if r.returncode != 1 or file_hits(r) != {("names.cpp", 7, "../shared/DEPS.md")}:
        failures.append(f"file names, the files added: exit {r.returncode}, expected 1 with "
                        f"names.cpp:7 alone:\n{r.stdout}{r.stderr}")

for f in failures:
    print("FAIL:", f)
print("check_comments:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
