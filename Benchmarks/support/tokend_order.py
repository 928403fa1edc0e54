"""Writes scripts/lib/tokend-order.txt: the functions of tokend's binary that serving runs, the most
run first, for lld's --symbol-ordering-file (scripts/lib/release-build.sh). Laid out together,
they take ~3 MB of code pages under load instead of ~6 (issue 47). Made by
Benchmarks/support/tokend_order.sh, which runs the daemon under callgrind and dumps twice:

    python3 Benchmarks/support/tokend_order.py BINARY STARTUP_DUMP SERVING_DUMP > scripts/lib/tokend-order.txt

Callgrind (--demangle=no, so names are the linker's) names a function once, in the first dump
that meets it, and by number after that: the start-up dump is read for names, the serving dump
for what ran. Only names the binary defines are kept (not libc's, not GLib's).
"""
import re
import subprocess
import sys

binary, dumps = sys.argv[1], sys.argv[2:]
defined = set()
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        defined.add(parts[2])

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
print("\n".join(name for count, name in ranked if name in defined))
