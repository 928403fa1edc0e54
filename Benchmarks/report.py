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


def kib(key):
    return int(facts[key]) / 1024


hyperfine = json.loads((run / "hyperfine.json").read_text())["results"]
SHELL_NAMES = ("tokenctl", "oidc-token", "token-client")
shell = {next(name for name in SHELL_NAMES if name in r["command"]): r for r in hyperfine}

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
]


def summary():
    """The issue's table (issue 20): each goal with both tools' figures from this run."""
    one, one_theirs = find("tokend", "per-request", 1), find("oidc-agent", "per-request", 1)
    many, many_theirs = find("tokend", "per-request", 64), find("oidc-agent", "per-request", 64)
    tc, ot = shell["tokenctl"]["median"], shell["oidc-token"]["median"]
    rows_out = [
        ("`tokenctl token` vs `oidc-token`, whole process, median", f"{tc * 1e3:.2f} ms", f"{ot * 1e3:.2f} ms",
         f"{tc / ot:.2f}× the time", "≤ 0.8×"),
        ("1 client, one connection per request, p50", f"{one['p50']:.0f} µs", f"{one_theirs['p50']:.0f} µs",
         f"{one['p50'] / one_theirs['p50']:.2f}× the latency", "≤ 1×"),
        ("64 clients, one connection per request", f"{many['rate'] / 1e3:.1f} k/s, p99 {many['p99'] / 1e3:.1f} ms",
         f"{many_theirs['rate'] / 1e3:.1f} k/s, p99 {many_theirs['p99'] / 1e3:.1f} ms",
         f"{many['rate'] / many_theirs['rate']:.2f}× / p99 {'lower' if many['p99'] < many_theirs['p99'] else 'higher'}",
         "≥ 2× / p99 lower"),
        ("idle RSS, 1 account (smaps_rollup)", f"{kib('TOKEND_RSS_1'):.1f} MB", f"{kib('AGENT_RSS'):.1f} MB",
         f"{int(facts['TOKEND_RSS_1']) / int(facts['AGENT_RSS']):.2f}× the memory", "≤ 12 MB"),
        (f"context switches in {facts['IDLE_SECONDS']} s idle", facts["TOKEND_IDLE_SWITCHES"], facts["AGENT_IDLE_SWITCHES"], "",
         "only armed timers and the watchdog"),
    ]
    out = ["## Summary: the goals of issue 20", "", "| measure | tokend | oidc-agent | ratio | goal |",
           "| --- | ---: | ---: | --- | --- |"]
    out += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows_out]
    return out + [""]


def machine_limit():
    """Issue 47's table (item 4): tokend against what this machine allows, from this run."""
    tc = shell["tokenctl"]["median"]
    floor = shell.get("token-client")
    minute = None
    if (run / "minute.tsv").exists():
        fields = (run / "minute.tsv").read_text().split("\t")
        minute = float(fields[6])
    persistent, bare = find("tokend", "persistent", 64), find("ceiling", "persistent", 64)
    rows_out = [
        ("`tokenctl token` against a static C client (`Benchmarks/token-client.c`), whole process, median",
         f"{tc * 1e3:.2f} ms", f"{floor['median'] * 1e3:.2f} ms" if floor else "—",
         f"{tc / floor['median']:.2f}× the time" if floor else "—", "≤ 1.5×"),
        ("64 persistent clients against the bare epoll server (`loadgen --serve`)",
         f"{persistent['rate'] / 1e3:.1f} k/s", f"{bare['rate'] / 1e3:.1f} k/s",
         f"{100 * persistent['rate'] / bare['rate']:.0f} % of it", "≥ 70 %"),
    ]
    if "TOKEND_RSS_AFTER_MINUTE" in facts:
        rows_out.append((f"RSS right after {facts['MINUTE_SECONDS']} s of 64 persistent clients"
                         + (f" ({minute / 1e3:.1f} k/s)" if minute else ""),
                         f"{kib('TOKEND_RSS_AFTER_MINUTE'):.1f} MB", "", "", "≤ 12 MB"))
    out = ["## Summary: the machine's limit (issue 47, item 4)", "", "| measure | tokend | the floor | ratio | goal |",
           "| --- | ---: | ---: | --- | --- |"]
    out += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows_out]
    return out + [""]


lines += summary() + machine_limit() + [
    "## Shell path: one whole process per token (hyperfine, same run)",
    "",
    "| command | median | mean ± σ | min | ratio (median) |",
    "| --- | ---: | ---: | ---: | ---: |",
]
for name, shown in (("tokenctl", "tokenctl token bench"), ("oidc-token", "oidc-token bench"), ("token-client", "token-client bench")):
    r = shell.get(name)
    if not r:
        continue
    lines.append(f"| `{shown}` | {r['median'] * 1e3:.2f} ms | {r['mean'] * 1e3:.2f} ± {r['stddev'] * 1e3:.2f} ms "
                 f"| {r['min'] * 1e3:.2f} ms | "
                 + (ratio(r['median'], shell['oidc-token']['median'], True) if name != "oidc-token" else "1")
                 + " |")
lines += ["", "Ratios against `oidc-token`. The static C client (`token-client`) sends tokenctl's request line and "
          "prints the token: what any client process can do at best here (process start, one round trip)."]

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
lines += [
    "",
    "oidc-agent closes each connection after one answer, so it has no persistent row.",
    "",
    "### The loopback ceiling",
    "",
    "A bare single-threaded epoll server (`loadgen --serve`) answering the same request line with a "
    "line as long as tokend's answer: what any daemon on this socket, with this client, can do at best.",
    "",
    "| clients | connection | ceiling req/s | p50 | p99 | tokend's share of the ceiling's throughput |",
    "| ---: | --- | ---: | ---: | ---: | ---: |",
]
for mode in ("per-request", "persistent"):
    for clients in sorted({r["clients"] for r in rows}):
        bare, ours = find("ceiling", mode, clients), find("tokend", mode, clients)
        if not bare:
            continue
        share = f"{100 * ours['rate'] / bare['rate']:.0f} %" if ours and bare["rate"] else "—"
        lines.append(f"| {clients} | {mode} | {bare['rate']:,.0f} | {bare['p50']:.0f} | {bare['p99']:.0f} | {share} |")
lines.append("")

agent_processes = facts.get("AGENT_PROCESSES", "?")
lines += [
    "## Memory and idleness",
    "",
    "Measured at the end of the idle window: tokend hands back the pages start-up and the load "
    "touched 4-8 s after a burst's last work, or 30 s after it began if it never goes quiet "
    "(docs/architecture.md, \"Memory at idle\").",
    "",
    "| measure | tokend | oidc-agent | ratio |",
    "| --- | ---: | ---: | ---: |",
]
for key, shown in (("RSS", "idle RSS, 1 account"), ("PSS", "PSS (shared pages divided among their users)"),
                   ("PRIVATE_DIRTY", "private dirty"), ("ANONYMOUS", "anonymous (heap, stacks, relocated data)")):
    # The KiB too: tenths of a MB hide the 50-100 KB a change moves (issue 47 compares runs by them).
    lines.append(f"| {shown} | {kib(f'TOKEND_{key}_1'):.1f} MB ({int(facts[f'TOKEND_{key}_1']):,} KiB) "
                 f"| {kib(f'AGENT_{key}'):.1f} MB ({agent_processes} processes) "
                 f"| {ratio(int(facts[f'TOKEND_{key}_1']), int(facts[f'AGENT_{key}']), True)} |")
lines += [
    f"| RSS just after the load | {kib('TOKEND_RSS_LOADED'):.1f} MB | | |",
    f"| pages the first request after the idle release faults back in: minor, major "
    f"| {facts.get('FIRST_MINOR_FAULTS', '?')}, {facts.get('FIRST_MAJOR_FAULTS', '?')} | | |",
    f"| context switches in {facts['IDLE_SECONDS']} s idle (all threads; tokend has {facts['TOKEND_THREADS']}) "
    f"| {facts['TOKEND_IDLE_SWITCHES']} "
    f"| {facts['AGENT_IDLE_SWITCHES']} | |",
]
if "TOKEND_RSS_MANY" in facts:
    lines += [
        f"| idle RSS, {facts['MANY']} accounts (quiet past the idle release: {facts.get('MANY_SETTLED_S', '35')} s after the imports) "
        f"| {int(facts['TOKEND_RSS_MANY']) / 1024:.1f} MB | | |",
        f"| start-up with {facts['MANY']} stored accounts (keyring restore, until every account answers) "
        f"| {facts['TOKEND_RESTORE_MS']} ms | | |",
    ]
lines += ["", f"![latency percentiles against concurrency]({out_png.name})", ""]
out_md.write_text("\n".join(lines))

figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
for axis, mode in zip(axes, ("per-request", "persistent")):
    for protocol, colour in (("tokend", "tab:blue"), ("oidc-agent", "tab:orange"), ("ceiling", "tab:gray")):
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
