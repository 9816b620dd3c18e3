#!/usr/bin/env python3
"""Disassemble the library's CUDA code with its source lines (for sass_breakdown.py --lines).

Compiles src/eti_cuda.cpp once more with exactly the command of a CMake
build directory (its compile_commands.json; scripts/lib.sh exports it) plus
`-lineinfo`, keeps the cubin, and writes `nvdisasm -gi` of it (every
instruction under its source line and the chain of inlined calls that led
there) to OUT (gzip if OUT ends in .gz). `-lineinfo` adds a line table; it
changed no instruction of the kernels profiled so far, and
sass_breakdown.py --lines checks that every time, instruction by
instruction, against the SASS that ncu profiled.

  python3 tools/profiling/sass_lines.py BUILD_DIR OUT [--nvdisasm PATH] [--legacy-elf]

--legacy-elf: for an nvdisasm older than the compiler (e.g. CUDA 11.8's,
which rejects the ELF header that CUDA 12.8 and later write: OS/ABI 0x41,
ABI version 8), rewrite the cubin's header to the older form (OS/ABI 0x33,
ABI version 7, the architecture in the flags) before disassembling. Only the
header changes; the code and line table are read as they are.
"""
import argparse
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile


def compile_command(build_dir):
    """The compile command of src/eti_cuda.cpp in BUILD_DIR, and its directory."""
    path = os.path.join(build_dir, "compile_commands.json")
    with open(path) as f:
        for entry in json.load(f):
            if entry["file"].endswith("src/eti_cuda.cpp"):
                cmd = entry.get("arguments") or shlex.split(entry["command"])
                return cmd, entry["directory"]
    sys.exit("%s has no entry for src/eti_cuda.cpp (a CUDA build of gdn?)" % path)


def legacy_header(cubin, out):
    """Copy `cubin` to `out` with its ELF header in the pre-12.8 form."""
    b = bytearray(open(cubin, "rb").read())
    if b[7] == 0x41:  # the newer form: the architecture in bits 8-15 (sm_90: flags 0x0a005a04)
        sm = (struct.unpack_from("<I", b, 0x30)[0] >> 8) & 0xFF
        b[7], b[8] = 0x33, 7
        # sm, virtual sm, 64-bit addresses (0x400), unified texture mode (0x100)
        struct.pack_into("<I", b, 0x30, sm | (sm << 16) | 0x500)
    open(out, "wb").write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("out")
    ap.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "nvdisasm")
    ap.add_argument("--legacy-elf", action="store_true")
    a = ap.parse_args()
    cmd, cwd = compile_command(os.path.abspath(a.build_dir))
    with tempfile.TemporaryDirectory() as tmp:
        # The same command, its object elsewhere, plus the line table and the kept cubin.
        args = []
        skip = False
        for x in cmd:
            if skip:
                skip = False
                continue
            if x == "-o":
                skip = True
                continue
            args.append(x)
        args += ["-lineinfo", "--keep", "--keep-dir=" + tmp, "-o", os.path.join(tmp, "eti.o")]
        subprocess.run(args, cwd=cwd, check=True)
        cubins = sorted(glob.glob(os.path.join(tmp, "*.cubin")))
        if len(cubins) != 1:
            sys.exit("expected one cubin, found %s" % cubins)
        cubin = cubins[0]
        if a.legacy_elf:
            legacy_header(cubin, os.path.join(tmp, "legacy.cubin"))
            cubin = os.path.join(tmp, "legacy.cubin")
        text = subprocess.run([a.nvdisasm, "-gi", "-c", cubin], check=True,
                              capture_output=True, text=True).stdout
    if not re.search(r"//## File", text):
        sys.exit("nvdisasm printed no line information")
    opener = gzip.open if a.out.endswith(".gz") else open
    with opener(a.out, "wt") as f:
        f.write(text)
    print("%s: %d functions, %d instructions" %
          (a.out, len(re.findall(r"^\.text\.", text, re.M)),
           len(re.findall(r"^\s*/\*[0-9a-f]{4,}\*/", text, re.M))))


if __name__ == "__main__":
    main()
