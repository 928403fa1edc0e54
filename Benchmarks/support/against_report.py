"""Turns one scripts/bench --against run (Benchmarks/against.sh) into its results page.

Input: the run's directory, holding loadgen.tsv (round, side, then loadgen's line) and facts.env;
AGAINST_LABEL names the other tree. Each ratio is new over old within one round, where both sides
ran back to back; the page gives each point's median over the rounds and the spread (least to
most) of the per-round ratios. Only the standard library.
"""
import os
import statistics
import sys
from pathlib import Path

run, out = Path(sys.argv[1]), Path(sys.argv[2])
facts = dict(line.split("=", 1) for line in (run / "facts.env").read_text().splitlines() if "=" in line)

# (clients, mode) -> round -> side -> row
points = {}
for line in (run / "loadgen.tsv").read_text().splitlines():
    round_, side, _protocol, mode, clients, requests, errors, _seconds, rate, p50, p99, _p999 = line.split("\t")
    points.setdefault((int(clients), mode), {}).setdefault(int(round_), {})[side] = dict(
        requests=int(requests), errors=int(errors), rate=float(rate), p50=float(p50), p99=float(p99))


def summary(rounds, key):
    """Median of each side over the rounds, and the per-round new/old ratios."""
    both = [r for r in rounds.values() if "old" in r and "new" in r]
    ratios = sorted(r["new"][key] / r["old"][key] for r in both if r["old"][key] > 0)
    return (statistics.median(r["old"][key] for r in both), statistics.median(r["new"][key] for r in both),
            statistics.median(ratios), ratios[0], ratios[-1])


lines = [
    f"# `token` on the main socket, before and after, side by side, {facts['STAMP']}",
    "",
    f"Machine: {facts['MACHINE']}. "
    f"**Load average: {facts['LOAD_BEFORE']} (start) → {facts['LOAD_AFTER']} (end)** "
    "(2 cores, shared: anything above ~0.3 means other work shared the CPUs).",
    f"`scripts/bench --against`: old = tokend of {os.environ['AGAINST_LABEL']}, new = this tree's; both "
    "release builds with `scripts/lib/release-build.sh`'s tokend command, stripped, on one fake Firebase, "
    "one account each with a cached token (replies "
    f"{facts['REPLY_OLD'].strip()} and {facts['REPLY_NEW'].strip()} bytes). "
    f"{facts['ROUNDS']} rounds; in each, every point ran {facts['POINT_SECONDS']} s against one daemon and then "
    "the other, the order swapped every round. Ratios are new ÷ old within a round: the median over the "
    "rounds, then the least and the most.",
    "",
    "| point | old, requests/s | new, requests/s | new ÷ old (spread) | old p50 / p99, µs | new p50 / p99, µs | p50 new ÷ old (spread) | errors |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
]
verdicts = []
for (clients, mode), rounds in sorted(points.items(), key=lambda item: (item[0][0], item[0][1])):
    old_rate, new_rate, rate_ratio, rate_low, rate_high = summary(rounds, "rate")
    old_p50, new_p50, p50_ratio, p50_low, p50_high = summary(rounds, "p50")
    old_p99, new_p99, _, _, _ = summary(rounds, "p99")
    errors = sum(r[side]["errors"] for r in rounds.values() for side in r)
    lines.append(
        f"| {clients} {mode} | {old_rate:,.0f} | {new_rate:,.0f} | {rate_ratio:.3f} ({rate_low:.3f}–{rate_high:.3f}) "
        f"| {old_p50:.1f} / {old_p99:.1f} | {new_p50:.1f} / {new_p99:.1f} "
        f"| {p50_ratio:.3f} ({p50_low:.3f}–{p50_high:.3f}) | {errors} |")
    verdicts.append((f"{clients} {mode}", rate_ratio))
lines += [
    "",
    "Throughput, new against old (median of the rounds): "
    + "; ".join(f"{name} {(ratio - 1) * 100:+.1f} %" for name, ratio in verdicts) + ".",
    "",
    "## Every round",
    "",
    "| round | point | old requests/s | new requests/s | new ÷ old |",
    "| ---: | --- | ---: | ---: | ---: |",
]
for (clients, mode), rounds in sorted(points.items()):
    for round_, r in sorted(rounds.items()):
        if "old" in r and "new" in r:
            lines.append(f"| {round_} | {clients} {mode} | {r['old']['rate']:,.0f} | {r['new']['rate']:,.0f} "
                         f"| {r['new']['rate'] / r['old']['rate']:.3f} |")
out.write_text("\n".join(lines) + "\n")
print(out.read_text())
