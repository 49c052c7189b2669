#!/usr/bin/env python3
"""A flat profile of the shipped (stripped) build, by function, through the linker's map.

    benches/perf_functions.py --map LINK_MAP --binary KVTOP PERF_DATA [--top N]

LINK_MAP is the linker's map of the build (`KVTOP_LINK_MAP=PATH cargo build --profile dist`, see
build.rs), KVTOP that binary and PERF_DATA a `perf record` of a console running it. perf names
a stripped binary's samples by their offset in the file; the map gives virtual addresses, and
the two differ by the executable segment's p_vaddr - p_offset (4 KiB in the shipped build), so
the offsets are moved by that much before they are looked up. Prints each function's samples
and share of the binary's samples, most first (demangled when c++filt is installed).
"""

import argparse
import bisect
import collections
import os
import re
import shutil
import subprocess
import sys

# The map reader is symbol_order.py's; no __pycache__ is left in benches/.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from symbol_order import exec_load_segments, text_sections  # noqa: E402

SAMPLE_ROW = re.compile(r"^\s*(\d+)\s+\[\.\]\s+0x([0-9a-f]+)")
RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


def exec_segment_shifts(binary):
    """(p_offset, p_filesz, p_vaddr - p_offset) of each executable PT_LOAD of a 64-bit ELF."""
    return [
        (offset, filesz, vaddr - offset)
        for offset, vaddr, filesz, _memsz in exec_load_segments(binary)
    ]


def samples_by_offset(perf_data, binary_name):
    """perf's samples in BINARY_NAME, by file offset."""
    out = subprocess.run(
        ["perf", "report", "-i", perf_data, "--dsos", binary_name, "--sort", "sym", "--stdio",
         "-F", "sample,sym"],
        capture_output=True, text=True, check=False,
    ).stdout
    counts = collections.Counter()
    for line in out.splitlines():
        row = SAMPLE_ROW.match(line)
        if row:
            counts[int(row[2], 16)] += int(row[1])
    return counts


def demangled(names):
    if not shutil.which("c++filt"):
        return names
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    lines = out.stdout.splitlines()
    return [RUST_HASH.sub("", n) for n in lines] if len(lines) == len(names) else names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--map", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("perf_data")
    args = parser.parse_args()

    sections = text_sections(args.map)
    if not sections:
        sys.exit(f"{args.map}: no .text input sections found")
    starts = [s for s, _, _ in sections]
    segments = exec_segment_shifts(args.binary)
    counts = samples_by_offset(args.perf_data, os.path.basename(args.binary))
    total = sum(counts.values())
    if total == 0:
        sys.exit(f"{args.perf_data}: no samples in {os.path.basename(args.binary)}")

    by_function = collections.Counter()
    for offset, n in counts.items():
        shift = next((s for o, size, s in segments if o <= offset < o + size), None)
        name = "(outside the executable segment)"
        if shift is not None:
            address = offset + shift
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and address < sections[i][1]:
                name = sections[i][2]
            else:
                name = "(not in the map)"
        by_function[name] += n
    ranked = by_function.most_common(args.top)
    names = demangled([name for name, _ in ranked])
    print(f"{total} samples in {os.path.basename(args.binary)}")
    for (_, n), name in zip(ranked, names):
        print(f"{n:7d} {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
