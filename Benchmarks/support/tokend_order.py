"""Writes scripts/lib/tokend-order.txt, lld's --symbol-ordering-file for tokend
(scripts/lib/release-build.sh), in two parts, both made by Benchmarks/support/tokend_order.sh:

    python3 Benchmarks/support/tokend_order.py code BINARY STARTUP_DUMP SERVING_DUMP
    python3 Benchmarks/support/tokend_order.py data BINARY PID

`code`: the functions serving runs, the most run first. Laid out together, they take ~3 MB of
code pages under load instead of ~6 (issue 47). Callgrind (--demangle=no, so names are the
linker's) names a function once, in the first dump that meets it, and by number after that: the
start-up dump is read for names, the serving dump for what ran.

`data`: the zero-initialised variables (.bss) that hold something in the running daemon PID after
serving. A page of .bss costs memory once anything on it is written, and the runtime's scattered
caches dirtied 544 KB of pages for 111 KB they use; laid out first, together, they dirty ~300 KB
(issue 47). A variable that holds only zeros is missed: it costs a page, never a behaviour.
Reading PID's memory needs ptrace's permission (root, or kernel.yama.ptrace_scope = 0).

Only names the binary defines are kept (not libc's, not GLib's).
"""
import re
import subprocess
import sys


def defined_symbols(binary):
    """(address, size, type, name) of each symbol the binary defines, from nm."""
    listing = subprocess.run(["nm", "--defined-only", "--print-size", binary], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            yield int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]
        elif len(parts) == 3:
            yield int(parts[0], 16), 0, parts[1], parts[2]


def code_order(binary, dumps):
    defined = {name for _, _, kind, name in defined_symbols(binary) if kind in "tTwW"}
    names = {}  # callgrind's number for a function -> its name
    naming = re.compile(r"^c?fn=\((\d+)\)(?: (.*))?$")
    cost = {}
    for index, dump in enumerate(dumps):
        serving = index == len(dumps) - 1
        current, skip_next = None, False
        with open(dump, errors="replace") as lines:
            for line in lines:
                match = naming.match(line)
                if match:
                    number, name = match.groups()
                    if name:
                        names[number] = name
                    if line.startswith("fn="):
                        current = number
                    continue
                if line.startswith("calls="):
                    skip_next = True  # the next cost line is the call's inclusive cost, not this function's
                    continue
                if line[:1] not in "0123456789+-*" or not line.strip():
                    continue
                if skip_next:
                    skip_next = False
                    continue
                fields = line.split()
                # "instr line Ir": positions first, the one event last.
                if serving and current and len(fields) == 3:
                    cost[current] = cost.get(current, 0) + int(fields[2])
    ranked = sorted(((count, names.get(number)) for number, count in cost.items()), key=lambda pair: -pair[0])
    return [name for count, name in ranked if name in defined]


def data_order(binary, pid):
    sections = subprocess.run(["readelf", "--section-headers", "--wide", binary], capture_output=True, text=True, check=True)
    bss = next(line.replace("[ ", "[").split() for line in sections.stdout.splitlines() if " .bss " in line)
    start, size = int(bss[3], 16), int(bss[5], 16)
    # The binary is position-independent: its first mapping's address is where 0 was loaded.
    with open(f"/proc/{pid}/maps") as maps:
        load = next(int(line.split("-")[0], 16) for line in maps if line.rstrip().endswith("/" + binary.split("/")[-1]))
    try:
        with open(f"/proc/{pid}/mem", "rb") as memory:
            memory.seek(load + start)
            contents = memory.read(size)
    except PermissionError:
        sys.exit(f"tokend_order.py: cannot read process {pid}'s memory: run as root, or with kernel.yama.ptrace_scope = 0")
    held = sorted((address, name) for address, length, kind, name in defined_symbols(binary)
                  if kind in "bB" and start <= address < start + size and any(contents[address - start:address - start + length]))
    return [name for _, name in held]


if __name__ == "__main__":
    mode, binary = sys.argv[1], sys.argv[2]
    names = code_order(binary, sys.argv[3:]) if mode == "code" else data_order(binary, int(sys.argv[3]))
    print("\n".join(names))
