"""Which modules' pages of tokend's own binary are resident: /proc/PID/pagemap for every page of
the binary's mappings, each present page charged to the nearest symbol at or below it (`nm`), the
symbol to its Swift module (from the mangled name) or to C/C++. Run as root or as the daemon's user.
Usage: resident-pages.py PID BINARY
"""
import sys, struct, subprocess, bisect, re, collections
pid, binary = sys.argv[1], sys.argv[2]
maps = [l.split() for l in open(f"/proc/{pid}/maps")]
base = None
ranges = []
for m in maps:
    if len(m) >= 6 and m[5].endswith("/tokend"):
        lo, hi = (int(x, 16) for x in m[0].split("-"))
        off = int(m[2], 16)
        if base is None and off == 0: base = lo
        ranges.append((lo, hi, m[1]))
syms = []
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3: syms.append((int(p[0], 16), p[2]))
syms.sort()
addrs = [a for a, _ in syms]
def module(name):
    m = re.match(r"^\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)", name)
    if m:
        n = int(m.group(1)); return m.group(2)[:n]
    if name.startswith("$s"): return "swift (other)"
    if name.startswith("_ZN5swift") or name.startswith("swift_") or "swift" in name[:20]: return "Swift runtime (C++)"
    if name.startswith("icu") or re.match(r"^u[a-z]+_", name) or "icu_" in name: return "ICU"
    return "C/C++ other"
pagemap = open(f"/proc/{pid}/pagemap", "rb")
count = collections.Counter(); detail = collections.Counter()
for lo, hi, perm in ranges:
    for page in range(lo, hi, 4096):
        pagemap.seek(page // 4096 * 8)
        entry = struct.unpack("<Q", pagemap.read(8))[0]
        if entry >> 63 & 1:
            v = page - base
            i = bisect.bisect_right(addrs, v) - 1
            name = syms[i][1] if i >= 0 else "?"; count[(perm, module(name))] += 4; detail[(module(name), name[:60])] += 4
for (perm, mod), kb in count.most_common(25):
    print(f"{kb:8d} kB  {perm}  {mod}")
print("total", sum(count.values()), "kB")
for (mod, name), kb in detail.most_common(15): print(f"{kb:8d} kB {mod}: {name}")
