#!/usr/bin/env python3
"""The README's C++ example is a part of examples/01_quickstart/main.cpp.

Every line of the first ```cpp block of README.md must be a line of the
quickstart (leading spaces aside), in the same order and contiguous (blank
lines aside) from the first one on; a README line starting with "// ..."
stands for any number of the file's lines. Any other gap, reordering or edit fails, so the example on the
first screen is always code the build compiles and ctest runs.
    readme_example.py REPO_ROOT
"""
import re
import sys
from pathlib import Path


def main(root: Path) -> int:
    readme = (root / "README.md").read_text()
    m = re.search(r"^```cpp\n(.*?)^```", readme, re.S | re.M)
    if not m:
        print("FAIL: no ```cpp block in README.md")
        return 1
    example = [l.strip() for l in m.group(1).splitlines()]
    source = [l.strip() for l in (root / "examples/01_quickstart/main.cpp").read_text().splitlines()]
    pos, skip = 0, True  # next source line to match; whether a gap is open (the first line may be anywhere)
    for n, line in enumerate(example, 1):
        if not line:
            continue
        if line.startswith("// ..."):
            skip = True
            continue
        if skip:
            try:
                pos = source.index(line, pos)
            except ValueError:
                pos = -1
        else:  # the next non-blank source line must be this one
            while pos < len(source) and not source[pos]:
                pos += 1
            if pos >= len(source) or source[pos] != line:
                pos = -1
        if pos < 0:
            print(f"FAIL: README example line {n} is not the quickstart's next line: {line}")
            return 1
        pos += 1
        skip = False
    print(f"ok: the README's example ({sum(1 for l in example if l)} lines) is the quickstart's")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
