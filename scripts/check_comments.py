#!/usr/bin/env python3
"""Fail on history in the comments of the library's sources.

usage: scripts/check_comments.py [PATH ...]   (default: include/ and src/ of the repository)

Comments say what the code does and why, in the present tense; what was
measured, when and at which commit belongs in git log and docs/performance.md.
This check reads the comments (// and /* */, not code or string literals) of
every C++ file under the given paths and reports, as FILE:LINE: [rule] text,
each comment line with
  session   a session or its ordinal ("session", "the twenty-first session"),
            or a pointer into the removed archive (docs/perf/history.md)
  commit    a commit hash (7 to 40 hex digits with at least one digit and one
            of a-f, not after 0x)
  timing    a timing history: a time or bandwidth figure ("was 158 us",
            "4.1 TB/s"), a percentage ("-2.6 %", "93 % of copy_bw"), a figure
            slower/faster ("2x faster"), a change of a figure ("60 -> 65"),
            a method of measuring ("medians of 3", "A-B-A")
A short reason with a pointer ("measured faster on the H200,
docs/performance.md") passes. Exit status 1 when anything is reported, 0 when
nothing is, 2 for a usage error. Python 3 standard library only.
"""
import os
import re
import sys

EXTENSIONS = (".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh", ".hpp.in", ".h.in")

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|"
    "twentieth|thirtieth|fortieth")
NUMBER = r"\d+(?:\.\d+)?"
RULES = [
    ("session", re.compile(r"\bsessions?\b", re.I)),
    ("session", re.compile(r"\b(?:twenty|thirty|forty)-(?:" + ORDINALS + r")\b", re.I)),
    ("commit", re.compile(r"(?<![0-9A-Za-z_])(?<!0x)(?<!0X)"
                          r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z_])")),
    ("timing", re.compile(NUMBER + r"\s*(?:us|ms|ns|µs|usec|microseconds?|milliseconds?)\b",
                          re.I)),
    ("timing", re.compile(NUMBER + r"\s*(?:[kMGTP]B/s|[GT]FLOP/s)\b")),
    ("timing", re.compile(NUMBER + r"\s*(?:%|x|times)\s+(?:slower|faster)\b", re.I)),
    ("timing", re.compile(r"\b(?:slower|faster) by\s+" + NUMBER, re.I)),
    # a percentage; a modulo in a comment has an identifier before its % (`r % A`, `w % 4`),
    # or a number after it (`16 % 4`)
    ("timing", re.compile(r"(?<![\w.])[+-]?" + NUMBER + r"\s*%(?!\s*[\d=])")),
    ("timing", re.compile(NUMBER + r"\s*->\s*" + NUMBER)),  # a figure before and after
    ("timing", re.compile(r"\d\.\d+\s*/\s*\d+\.\d+")),  # a list of measured figures
    ("timing", re.compile(r"\bsame (?:H200|GPU|CPU|EPYC) (?:call|calls|run|runs|lease)\b")),
    ("timing", re.compile(r"\bmedians? of (?:\d|three|five)", re.I)),
    ("timing", re.compile(r"\bA-B(?:-A)?\b")),
    ("session", re.compile(r"docs/perf/(?:history|session)")),  # the removed measurement archive
]


def comments(text):
    """Yield (line number, comment text of that line) for every comment line of a C++ source."""
    i, n, line = 0, len(text), 1
    current = {}  # line -> comment text on it

    def add(start_line, chunk):
        for k, part in enumerate(chunk.split("\n")):
            current[start_line + k] = current.get(start_line + k, "") + " " + part

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            add(line, text[i + 2:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            chunk = text[i + 2:end]
            add(line, chunk)
            line += chunk.count("\n")
            i = end + 2
        elif c == '"' or c == "'":
            if c == '"' and i > 0 and text[i - 1] == "R":  # raw string R"delim( ... )delim"
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                end = text.find(")" + delim + '"', open_paren)
                end = n if end < 0 else end + len(delim) + 2
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                end = j + 1
            line += text.count("\n", i, end)
            i = end
        else:
            i += 1
    return sorted(current.items())


def check_file(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    hits = []
    for number, comment in comments(text):
        for rule, pattern in RULES:
            m = pattern.search(comment)
            if m:
                hits.append((number, rule, m.group(0), comment.strip()))
                break
    return hits


def sources(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(EXTENSIONS):
                    yield os.path.join(root, name)


def main(argv):
    if any(a.startswith("-") for a in argv[1:]):
        sys.stderr.write(__doc__)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = argv[1:] or [os.path.join(root, "include"), os.path.join(root, "src")]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        sys.stderr.write(f"check_comments: no such path: {', '.join(missing)}\n")
        return 2
    count = 0
    for path in sources(paths):
        shown = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
        for number, rule, match, comment in check_file(path):
            count += 1
            short = comment if len(comment) <= 120 else comment[:117] + "..."
            print(f"{shown}:{number}: [{rule}] '{match}': {short}")
    if count:
        print(f"check_comments: {count} comment line(s) carry history (session ordinals, "
              "commit hashes or timings); say what the code does and why, and point to "
              "docs/performance.md for measurements")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
