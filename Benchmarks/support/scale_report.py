"""Writes the scale run's Markdown table from the facts Benchmarks/scale.sh gathered.
Usage: scale_report.py WORK_DIR OUT.md"""
import json
import os
import sys

work, out = sys.argv[1], sys.argv[2]
facts = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(work, "facts.env")))
load = lambda name: json.load(open(os.path.join(work, name)))
provision, sample, status, startup = load("provision.json"), load("sample.json"), load("status.json"), load("startup.json")
per_second = [int(n) for n in open(os.path.join(work, "refreshes-per-second")).read().split()]
accounts = int(facts["ACCOUNTS"])
seconds = int(facts["MINUTES"]) * 60
refreshes = sum(per_second)
# Each account refreshes about every 40 s (60-second tokens, a third of their life as margin).
expected = accounts * seconds / 40
mib = lambda kib: f"{int(kib) / 1024:.1f} MB"

rows = [
    ("answers to the sampling client (random account, one connection each, `min_valid` 0)", f"{sample['answers']:,}"),
    ("failed answers", f"{sample['failed']}" + (f" ({sample['errors']})" if sample["errors"] else "")),
    ("expired tokens served (by the token's `exp`)", f"{sample['expired']}"),
    ("tokens served with < 6.7 s left (a proactive refresh came late)", f"{sample['late']}"),
    ("least validity left in any answer", f"{sample['min_seconds_left']} s"),
    ("answer latency p50 / p99 / max (wall clock)", f"{sample['latency_ms_p50']} / {sample['latency_ms_p99']} / {sample['latency_ms_max']} ms"),
    ("refreshes the fake saw in the window", f"{refreshes:,} ({refreshes / seconds:.1f}/s; {expected / seconds:.1f}/s if every account refreshed every 40 s)"),
    ("busiest second", f"{max(per_second, default=0)} refreshes"),
    ("seconds with at least one refresh (the window's first and last seconds count whole)", f"{len(per_second)} of ~{seconds}"),
    ("tokend CPU, share of one core", f"{facts['TOKEND_CPU']} %"),
    ("fake Firebase CPU / gnome-keyring CPU", f"{facts['FAKE_CPU']} % / {facts['KEYRING_CPU']} %"),
    ("tokend RSS after the window", mib(facts["TOKEND_RSS"])),
    ("tokend descriptors / limit, threads", f"{facts['TOKEND_FDS']} / {facts['TOKEND_FD_LIMIT']}, {facts['TOKEND_THREADS']}"),
    ("gnome-keyring RSS", mib(facts["KEYRING_RSS"])),
    ("`status` reply for every account", f"{status['status_bytes']:,} bytes in {status['status_ms']} ms; states {status['states']}"),
    ("provisioning (user on the fake + import with its first refresh, 8 at a time)", f"{provision['provisioned']:,} in {provision['provision_seconds']} s, {provision['provision_failed']} failed"),
    ("restart with every session stored: socket answers `hello`", f"{startup.get('socket_ms')} ms"),
    ("restart: READY=1 (every stored session read, or the 5-second keyring deadline spent)",
     f"{startup['ready_ms']} ms" if startup.get("ready_ms") else "not within 300 s"),
    ("restart: no account still `waiting_for_keyring`",
     f"{startup['all_restored_ms']} ms" if startup.get("all_restored_ms") else "not within 300 s"),
    ("tokend RSS just after the restart", mib(facts["TOKEND_RSS_RESTARTED"])),
]

with open(out, "w") as f:
    f.write(f"# Scale: {accounts:,} accounts with 60-second tokens, {facts['MINUTES']} minutes, {facts['STAMP']}\n\n")
    f.write(f"Machine: {facts['MACHINE']}. `scripts/bench --scale {accounts} --minutes {facts['MINUTES']}`.\n")
    f.write(f"**Load average: {facts['LOAD_BEFORE']} (start) → {facts['LOAD_AFTER']} (end)** on 2 cores: "
            "wall-clock figures (latencies, start-up) are noisy when it is above ~0.3; counts are not.\n")
    f.write(f"A client asks a random account for a token {facts['SAMPLE_RATE']} times a second throughout.\n\n")
    f.write("| measure | value |\n| --- | ---: |\n")
    for name, value in rows:
        f.write(f"| {name} | {value} |\n")
