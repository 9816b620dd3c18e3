#!/usr/bin/env python3
"""Fail on history in the comments of the library's sources, and on file names that name no file.

usage: scripts/check_comments.py [--root DIR] [PATH ...]
       (default: every place below, in the repository this script is in)

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
docs/performance.md") passes. The history rules read the C++ files of
include/ and src/ (the library) by default, and of every path given.

It also reads the comments of every C++ file and the whole text of every
Markdown file (*.md; CHANGELOG.md is exempt: it describes history) and
reports, as FILE:LINE: [file] name,
  file      a file name that names no file of the tree: a token ending in
            .hpp .cpp .py .sh .md .cmake .txt or .json that is none of
            - a path from the tree's root, from the file's own folder, or
              from include/ (e.g. gdn/config.hpp),
            - the tail of a path in the tree (impl/launch.hpp), or for a
              bare name, the name of a file anywhere in the tree,
            - a file CMake configures from NAME.in (GDNConfig.cmake),
            - a name of EXTERNAL below (another project's files).
            URLs, absolute paths, paths whose first folder is no folder of
            the tree (build/..., out/...) and patterns (bench_*.json,
            <name>.md, bench_NAME.json, $OUT/x.txt) are not file names of
            the tree. The tree is `git ls-files` (tracked and untracked,
            not ignored) of --root (default: the repository), or every file
            under --root outside git.
By default the history rules read include/ and src/, and the file rule the
C++ sources of include/, src/, tests/, perf/, examples/, python/src/ and
tools/ and the Markdown files README.md, docs/*.md, python/README.md and
those under tools/. Exit status 1 when anything is reported, 0 when nothing
is, 2 for a usage error. Python 3 standard library only.
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

EXTENSIONS = (".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh", ".hpp.in", ".h.in")
MARKDOWN = ".md"
EXEMPT = {"CHANGELOG.md"}  # it describes history, names of files that are gone included

# The places each rule reads by default (relative to the repository).
HISTORY_DEFAULT = ["include", "src"]
FILE_DEFAULT = ["include", "src", "tests", "perf", "examples", "python/src", "tools", "README.md",
                "docs/*.md", "python/README.md"]

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


FILE_EXTENSIONS = ("hpp", "cpp", "py", "sh", "md", "cmake", "txt", "json")
PATH_TOKEN = re.compile(r"[A-Za-z0-9_./+-]+")
FILE_NAME = re.compile(r"(?:[A-Za-z0-9_.+-]*/)*[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.(?:"
                       + "|".join(FILE_EXTENSIONS) + r")")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
PATTERN_MARKS = set("*<>{}$%@")  # next to a token: the token is part of a pattern, not a name
# File names of other projects, which a comment or a doc may name (fnmatch patterns), and why.
EXTERNAL = {
    "chunk_delta_h.py": "fla's (flash-linear-attention) kernel of the chunked state, which "
                        "docs/performance.md compares with",
}


def is_pattern(token):
    """A placeholder path: an upper-case folder (DIR/x.md) or an upper-case piece beside a
    lower-case one in a name (bench_NAME.json)."""
    parts = token.split("/")
    for k, part in enumerate(parts):
        stem = part.split(".")[0]
        if k < len(parts) - 1 and re.fullmatch(r"[A-Z][A-Z0-9_]*", stem):
            return True
        pieces = [x for x in re.split(r"[_-]", stem) if x]
        if (any(re.fullmatch(r"[A-Z][A-Z0-9]*", x) for x in pieces)
                and any(re.search(r"[a-z]", x) for x in pieces)):
            return True
    return False


def file_names(text):
    """Yield the file names of a line of text (URLs, patterns and external names left out)."""
    text = URL.sub(" ", text)
    for m in PATH_TOKEN.finditer(text):
        token = m.group(0).rstrip(".")  # a sentence's full stop
        while token.startswith("./"):
            token = token[2:]
        if not FILE_NAME.fullmatch(token) or token.startswith("/"):
            continue
        before = text[m.start() - 1] if m.start() > 0 else " "
        after = text[m.end()] if m.end() < len(text) else " "
        if before in PATTERN_MARKS or after in PATTERN_MARKS or is_pattern(token):
            continue
        if any(fnmatch.fnmatchcase(token.rsplit("/", 1)[-1], name) for name in EXTERNAL):
            continue
        yield token


class Tree:
    """The files of the tree at `root`: `git ls-files` (tracked and untracked, not ignored)
    where root is in a git work tree, else every file under it."""

    def __init__(self, root):
        self.root = root
        try:
            out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], capture_output=True, check=True).stdout
            names = [n for n in out.decode("utf-8", "replace").split("\0") if n]
            names = [n for n in names if os.path.isfile(os.path.join(root, n))]
        except (OSError, subprocess.CalledProcessError):
            names = []
            for top, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                names += [os.path.relpath(os.path.join(top, f), root) for f in files]
        self.files = {n.replace(os.sep, "/") for n in names}
        self.names = {n.rsplit("/", 1)[-1] for n in self.files}
        self.folders = {part for n in self.files for part in n.split("/")[:-1]}

    def has(self, rel):
        return rel in self.files or rel + ".in" in self.files

    def resolves(self, token, folder):
        """Whether `token` names a file of the tree, read in the file of folder `folder`
        (relative to the root)."""
        if "/" not in token:
            return token in self.names or token + ".in" in self.names
        if token.split("/")[0] not in self.folders | {".."}:
            return True  # under a folder the tree has none of (build/, out/): not the tree's
        for path in (token, folder + "/" + token if folder else token, "include/" + token):
            path = os.path.normpath(path).replace(os.sep, "/")
            if not path.startswith("../") and self.has(path):
                return True
        if ".." in token.split("/"):
            return False
        return any(f.endswith("/" + token) or f.endswith("/" + token + ".in") for f in self.files)


def check_names(path, tree):
    """(line number, name) of every file name in `path` (the comments of a C++ file, the text
    of a Markdown file) that names no file of `tree`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.endswith(MARKDOWN):
        lines = enumerate(text.split("\n"), 1)
    else:
        lines = comments(text)
    rel = os.path.relpath(os.path.abspath(path), tree.root).replace(os.sep, "/")
    folder = "" if rel.startswith("../") else os.path.dirname(rel)
    hits = []
    for number, line in lines:
        for name in file_names(line):
            if not tree.resolves(name, folder):
                hits.append((number, name))
    return hits


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


def sources(paths, markdown):
    """The C++ files (and with `markdown` the Markdown files but CHANGELOG.md) of `paths`."""
    ext = EXTENSIONS + ((MARKDOWN,) if markdown else ())
    for p in paths:
        if os.path.isfile(p):
            if p.endswith(ext) and os.path.basename(p) not in EXEMPT:
                yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(ext) and name not in EXEMPT:
                    yield os.path.join(root, name)


def expand(root, places):
    """The default places under `root`, globs expanded (a missing place is left out)."""
    out = []
    for place in places:
        out += sorted(glob.glob(os.path.join(root, place)))
    return out


def main(argv):
    args = argv[1:]
    root = None
    if len(args) >= 2 and args[0] == "--root":
        root, args = os.path.abspath(args[1]), args[2:]
    if any(a.startswith("-") for a in args) or (root is not None and not os.path.isdir(root)):
        sys.stderr.write(__doc__)
        return 2
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = root or repo
    missing = [p for p in args if not os.path.exists(p)]
    if missing:
        sys.stderr.write(f"check_comments: no such path: {', '.join(missing)}\n")
        return 2
    history_paths = args or expand(repo, HISTORY_DEFAULT)
    file_paths = args or expand(repo, FILE_DEFAULT)

    def shown(path):
        path = os.path.abspath(path)
        return os.path.relpath(path, root) if path.startswith(root + os.sep) else path

    count = 0
    for path in sources(history_paths, markdown=False):
        for number, rule, match, comment in check_file(path):
            count += 1
            short = comment if len(comment) <= 120 else comment[:117] + "..."
            print(f"{shown(path)}:{number}: [{rule}] '{match}': {short}")
    if count:
        print(f"check_comments: {count} comment line(s) carry history (session ordinals, "
              "commit hashes or timings); say what the code does and why, and point to "
              "docs/performance.md for measurements")
    tree = Tree(root)
    names = 0
    for path in sources(file_paths, markdown=True):
        for number, name in check_names(path, tree):
            names += 1
            print(f"{shown(path)}:{number}: [file] {name}")
    if names:
        print(f"check_comments: {names} file name(s) name no file of the tree; name the file "
              "as it is now, or, for another project's file, say whose it is (or add it to "
              "EXTERNAL in scripts/check_comments.py with the reason)")
    return 1 if count or names else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
