"""Turns one scripts/bench run into Benchmarks/results/<stamp>.md and <stamp>.png.

Input: the run's directory, holding loadgen.tsv (one loadgen line per measurement), hyperfine.json
and facts.env (KEY=VALUE lines the shell part measured). Only the standard library and matplotlib.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display here: render straight to PNG
import matplotlib.pyplot as plt

run, out_md, out_png = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
facts = dict(line.split("=", 1) for line in (run / "facts.env").read_text().splitlines() if "=" in line)

rows = []
for line in (run / "loadgen.tsv").read_text().splitlines():
    protocol, mode, clients, requests, errors, seconds, rate, p50, p99, p999 = line.split("\t")
    rows.append(dict(protocol=protocol, mode=mode, clients=int(clients), requests=int(requests),
                     errors=int(errors), rate=float(rate), p50=float(p50), p99=float(p99), p999=float(p999)))


def find(protocol, mode, clients):
    return next((r for r in rows if (r["protocol"], r["mode"], r["clients"]) == (protocol, mode, clients)), None)


def ratio(ours, theirs, lower_is_better):
    """How many times better tokend is (>1 is better), as text."""
    if not ours or not theirs:
        return "—"
    return f"{(theirs / ours if lower_is_better else ours / theirs):.2f}×"


hyperfine = json.loads((run / "hyperfine.json").read_text())["results"]
shell = {("tokenctl" if "tokenctl" in r["command"] else "oidc-token"): r for r in hyperfine}

lines = [
    f"# tokend against oidc-agent, {facts['STAMP']}",
    "",
    f"Machine: {facts['MACHINE']}.",
    f"**Load average while measuring: {facts['LOAD_BEFORE']} (start) → {facts['LOAD_AFTER']} (end)** "
    "(2 cores: anything above ~0.3 means other work shared the CPUs and the numbers are noisy).",
    f"Binaries: release builds as `scripts/install` ships them ({facts['TOKENCTL_LINK']}).",
    "Both daemons hold one account with a cached token; every request asks for ≥ 60 s of validity.",
    f"The whole run, release build included: {int(facts['BENCH_WALL_S']) / 60:.1f} min."
    if "BENCH_WALL_S" in facts else "The whole run's wall time was not recorded.",
    "Ratios: how many times better tokend is (> 1 is better).",
    "",
    "## Shell path: one whole process per token (hyperfine, same run)",
    "",
    "| command | median | mean ± σ | min | ratio (median) |",
    "| --- | ---: | ---: | ---: | ---: |",
]
for name, shown in (("tokenctl", "tokenctl token bench"), ("oidc-token", "oidc-token bench")):
    r = shell[name]
    lines.append(f"| `{shown}` | {r['median'] * 1e3:.2f} ms | {r['mean'] * 1e3:.2f} ± {r['stddev'] * 1e3:.2f} ms "
                 f"| {r['min'] * 1e3:.2f} ms | "
                 + (ratio(shell['tokenctl']['median'], shell['oidc-token']['median'], True) if name == "tokenctl" else "1")
                 + " |")

lines += [
    "",
    "## Socket path: the load generator (`Benchmarks/loadgen.c`), latencies in µs",
    "",
    "| clients | connection | tokend req/s | p50 | p99 | p99.9 | oidc-agent req/s | p50 | p99 | p99.9 | throughput ratio | p99 ratio |",
    "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
]
for mode in ("per-request", "persistent"):
    for clients in sorted({r["clients"] for r in rows}):
        ours, theirs = find("tokend", mode, clients), find("oidc-agent", mode, clients)
        if not ours:
            continue
        errs = f" ({ours['errors']} errors)" if ours["errors"] else ""
        their_cells = (f"{theirs['rate']:,.0f} | {theirs['p50']:.0f} | {theirs['p99']:.0f} | {theirs['p999']:.0f}"
                       if theirs else "— | — | — | —")
        lines.append(
            f"| {clients} | {mode} | {ours['rate']:,.0f}{errs} | {ours['p50']:.0f} | {ours['p99']:.0f} | {ours['p999']:.0f} "
            f"| {their_cells} | {ratio(ours['rate'], theirs and theirs['rate'], False)} "
            f"| {ratio(ours['p99'], theirs and theirs['p99'], True)} |")
lines += ["", "oidc-agent closes each connection after one answer, so it has no persistent row.", ""]

lines += [
    "## Memory and idleness",
    "",
    "| measure | tokend | oidc-agent | ratio |",
    "| --- | ---: | ---: | ---: |",
    f"| idle RSS, 1 account | {int(facts['TOKEND_RSS_1']) / 1024:.1f} MB | {int(facts['AGENT_RSS']) / 1024:.1f} MB "
    f"({facts['AGENT_PROCESSES']} processes) | {ratio(int(facts['TOKEND_RSS_1']), int(facts['AGENT_RSS']), True)} |",
    f"| of which file-backed (mapped libraries) | {int(facts['TOKEND_FILE_1']) / 1024:.1f} MB | | |",
    f"| of which anonymous (heap, stacks) | {int(facts['TOKEND_ANON_1']) / 1024:.1f} MB | | |",
    f"| context switches in {facts['IDLE_SECONDS']} s idle (all threads; tokend has {facts['TOKEND_THREADS']}) "
    f"| {facts['TOKEND_IDLE_SWITCHES']} "
    f"| {facts['AGENT_IDLE_SWITCHES']} | |",
]
if "TOKEND_RSS_MANY" in facts:
    lines += [
        f"| idle RSS, {facts['MANY']} accounts | {int(facts['TOKEND_RSS_MANY']) / 1024:.1f} MB | | |",
        f"| start-up with {facts['MANY']} stored accounts (keyring restore, until the last one answers) "
        f"| {facts['TOKEND_RESTORE_MS']} ms | | |",
    ]
lines += ["", f"![latency percentiles against concurrency]({out_png.name})", ""]
out_md.write_text("\n".join(lines))

figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
for axis, mode in zip(axes, ("per-request", "persistent")):
    for protocol, colour in (("tokend", "tab:blue"), ("oidc-agent", "tab:orange")):
        points = sorted((r for r in rows if r["protocol"] == protocol and r["mode"] == mode), key=lambda r: r["clients"])
        if not points:
            continue
        xs = [p["clients"] for p in points]
        for key, style in (("p50", "-"), ("p99", "--"), ("p999", ":")):
            axis.plot(xs, [p[key] for p in points], style, marker="o", color=colour, label=f"{protocol} {key}")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xticks([1, 8, 64, 256], ["1", "8", "64", "256"])
    axis.set_xlabel("concurrent clients")
    axis.set_title(f"one connection {'per request' if mode == 'per-request' else 'per client (persistent)'}")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
axes[0].set_ylabel("latency (µs, log)")
figure.suptitle(f"token request latency, {facts['STAMP']}, load average {facts['LOAD_BEFORE']} → {facts['LOAD_AFTER']}")
figure.tight_layout()
figure.savefig(out_png, dpi=110)
print(out_md.read_text())
