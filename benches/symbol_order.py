#!/usr/bin/env python3
"""Turn the functions a console ran into lld's symbol ordering file (benches/symbol-order.txt).

    benches/symbol_order.py --map LINK_MAP --binary KVTOP [--after RUN.callgrind] RUN.callgrind ...
    benches/symbol_order.py --map LINK_MAP --check benches/symbol-order.txt

LINK_MAP is the linker's map of the build that ran (`KVTOP_LINK_MAP=PATH cargo build --profile
dist`, see build.rs), KVTOP that binary and each RUN a callgrind profile of it
(`valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no`). Every
instruction callgrind saw executed in KVTOP is looked up in the map's `.text` input sections (one
per function: rustc and cc emit function sections); each section that ran is named by one of its
symbols. Functions that ran in more of the runs come first, then the ones that ran more
instructions, so what every console runs is packed together at the start of `.text`; what
ran only in the --after runs (the simulator of `kvtop demo`) follows all of it.
"""

import argparse
import bisect
import collections
import os
import re
import struct
import sys


MAP_ROW = re.compile(
    r"^\s*(?P<vma>[0-9a-f]+)\s+[0-9a-f]+\s+(?P<size>[0-9a-f]+)\s+\d+ (?P<rest>.*?)\n?$"
)

# Function sections are `.text.SYMBOL`, some with a prefix LLVM adds (cold, startup code).
SECTION_PREFIXES = (".text.unlikely.", ".text.hot.", ".text.startup.", ".text.exit.", ".text.")


def symbol_of_section(input_section):
    """SYMBOL of `FILE:(.text.SYMBOL)`; None for a section that holds more than one function.

    The map lists only global symbols under their sections, and after fat LTO nearly every
    function is local, so the section's own name is what names it."""
    if not input_section.endswith(")") or ":(" not in input_section:
        return None
    section = input_section[input_section.rindex(":(") + 2 : -1]
    for prefix in SECTION_PREFIXES:
        if section.startswith(prefix) and len(section) > len(prefix):
            return section[len(prefix) :]
    return None


def text_sections(map_path):
    """(start, end, symbol) of each `.text` input section with a symbol, sorted by start."""
    sections = []
    in_text = False
    current = None  # [start, end, first symbol or None]
    with open(map_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            row = MAP_ROW.match(line)
            if row is None:
                continue
            vma, size = int(row["vma"], 16), int(row["size"], 16)
            rest = row["rest"]
            # After the Align column the map indents an output section by 1 character, its
            # input sections by 9 and their symbols by 17.
            indent = len(rest) - len(rest.lstrip(" "))
            name = rest.strip()
            if indent == 0:
                in_text = name == ".text"
                continue
            if not in_text:
                continue
            if indent <= 8:
                current = [vma, vma + size, symbol_of_section(name)]
                sections.append(current)
            elif current is not None and current[2] is None and current[0] <= vma < current[1] + 1:
                current[2] = name
    named = [(s, e, sym) for s, e, sym in sections if sym is not None and e > s]
    named.sort()
    return named


def exec_load_segments(binary):
    """(p_offset, p_vaddr, p_filesz, p_memsz) of each executable PT_LOAD of a 64-bit ELF."""
    with open(binary, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:
            sys.exit(f"{binary}: not a 64-bit ELF")
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    segments = []
    for i in range(phnum):
        p_type, p_flags, offset, vaddr, _paddr, filesz, memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", table, i * phentsize
        )
        if p_type == 1 and p_flags & 1:
            segments.append((offset, vaddr, filesz, memsz))
    return segments


def exec_segments(binary):
    """(vaddr, memsz) of each executable PT_LOAD of a 64-bit little-endian ELF."""
    return [(vaddr, memsz) for _offset, vaddr, _filesz, memsz in exec_load_segments(binary)]


def executed_addresses(profile, binary_name):
    """Instruction addresses callgrind counted in the object whose path ends in BINARY_NAME."""
    addresses = collections.Counter()
    ours = False
    with open(profile, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                ours = os.path.basename(line[3:].strip()) == binary_name
            elif ours and line.startswith("0x"):
                fields = line.split()
                cost = int(fields[-1]) if len(fields) > 1 and fields[-1].isdigit() else 1
                addresses[int(fields[0], 16)] += cost
    return addresses


def check(map_path, order_path):
    """How much of ORDER the build of MAP still has: the order goes stale as the code changes
    (a name the build no longer has is skipped by the linker, silently)."""
    sections = text_sections(map_path)
    if not sections:
        sys.exit(f"{map_path}: no .text input sections found")
    sizes = {sym: e - s for s, e, sym in sections}
    with open(order_path) as f:
        listed = [line.strip() for line in f if line.strip()]
    found = [s for s in listed if s in sizes]
    share = len(found) / len(listed) if listed else 0.0
    print(
        f"symbol order: {len(found)} of {len(listed)} listed functions are in this build "
        f"({share:.0%}, {sum(sizes[s] for s in found) / 1024:.0f} KiB of code)"
    )
    if share < STALE_BELOW:
        print(
            f"symbol order: stale (below {STALE_BELOW:.0%}): regenerate it with "
            "benches/symbol_order.sh"
        )
        sys.exit(1)


# Below this share of its functions still in the build, the order is called stale.
STALE_BELOW = 0.9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--map", required=True)
    parser.add_argument(
        "--check",
        metavar="ORDER",
        help="only say how much of ORDER (benches/symbol-order.txt) the build of --map has",
    )
    parser.add_argument("--binary")
    parser.add_argument(
        "--after",
        action="append",
        default=[],
        help="a profile whose functions go after every function of the others (kvtop demo)",
    )
    parser.add_argument("profiles", nargs="*")
    args = parser.parse_args()
    if args.check:
        check(args.map, args.check)
        return
    if not args.binary or not args.profiles:
        parser.error("--binary and at least one profile are needed to make an order")

    sections = text_sections(args.map)
    if not sections:
        sys.exit(f"{args.map}: no .text input sections found")
    starts = [s for s, _, _ in sections]
    segments = exec_segments(args.binary)
    name = os.path.basename(args.binary)

    runs = collections.Counter()  # symbol -> number of (first) runs it ran in
    later = set()  # symbols that ran only in the --after runs
    cost = collections.Counter()  # symbol -> instructions over every run
    for profile in args.profiles + args.after:
        addresses = executed_addresses(profile, name)
        inside = [a for a in addresses if any(v <= a < v + m for v, m in segments)]
        if len(inside) < len(addresses) * 0.9:
            sys.exit(f"{profile}: its addresses do not fall in {args.binary}'s code")
        seen = set()
        for address, count in addresses.items():
            i = bisect.bisect_right(starts, address) - 1
            if i < 0 or address >= sections[i][1]:
                continue
            symbol = sections[i][2]
            seen.add(symbol)
            cost[symbol] += count
        for symbol in seen:
            if profile in args.after:
                later.add(symbol)
            else:
                runs[symbol] += 1
        print(f"{profile}: {len(seen)} functions", file=sys.stderr)

    later -= set(runs)
    order = sorted(runs, key=lambda s: (-runs[s], -cost[s], s))
    order += sorted(later, key=lambda s: (-cost[s], s))
    sizes = {sym: e - s for s, e, sym in sections}
    total = sum(sizes[s] for s in order)
    print(f"{len(order)} functions, {total / 1024:.0f} KiB of code", file=sys.stderr)
    sys.stdout.write("".join(f"{s}\n" for s in order))


if __name__ == "__main__":
    main()
