"""Writes scripts/lib/tokenctl-order.txt: the symbols `tokenctl token ACCOUNT` touches, in the
order it first touches them, for lld's --symbol-ordering-file (scripts/lib/release-build.sh).

    valgrind --tool=lackey --trace-mem=yes --log-file=TRACE BINARY token ACCOUNT
    python3 Benchmarks/support/tokenctl_order.py BINARY TRACE > scripts/lib/tokenctl-order.txt

BINARY must keep its symbol table (`strip --strip-debug`: valgrind cannot read the Swift
toolchain's DWARF). Code comes first, then data: the linker moves whole input sections, so each
group ends up on as few pages as the sections allow. Only the standard library.
"""
import bisect
import sys

from tokend_order import defined_symbols

binary, trace = sys.argv[1], sys.argv[2]
symbols = sorted((address, size, name, kind in "tTwW")  # (address, size, name, is_code)
                 for address, size, kind, name in defined_symbols(binary) if size and kind in "tTwWdDbBrRvV")
starts = [s[0] for s in symbols]
code, data, seen = [], [], set()
with open(trace) as lines:
    for line in lines:
        # lackey: "I  ADDR,SIZE" for an instruction, " L|S|M ADDR,SIZE" for a data access.
        kind, _, rest = line.strip().partition(" ")
        if kind not in ("I", "L", "S", "M"):
            continue
        address = int(rest.strip().split(",")[0], 16)
        index = bisect.bisect_right(starts, address) - 1
        if index < 0:
            continue
        start, size, name, is_code = symbols[index]
        if address < start + size and name not in seen:
            seen.add(name)
            (code if is_code else data).append(name)
print("\n".join(code + data))
