#!/usr/bin/env bash
# The restart run of scripts/bench --restart (issue 20): ACCOUNTS accounts with hour-long tokens
# against the fake Firebase, refreshed for MINUTES minutes while a client asks random accounts for
# tokens; then `kill -9`, a restart, and every account asked once: each must be served from what
# the keyring holds, none may need a login. Keyring writes are counted on the bus (dbus-monitor:
# every Secret Service CreateItem), per minute and per phase. Runs inside scripts/bench's private
# session (D-Bus, keyring) with BENCH_BIN and BENCH_FAKE set; writes
# Benchmarks/results/<UTC time>-restart-<ACCOUNTS>.md.
set -euo pipefail
# A busy client, small beside the refresh load it checks.
sample_rate=20
# Hour-long tokens, as Firebase issues them.
lifetime=3600

RUN_NAME=restart
source Benchmarks/support/run.sh
stamp() { date -u +%FT%T.%3NZ; }

# gnome-keyring's in-memory collection as the default one. Its file-backed login collection
# rewrites the whole file on every store (measured here: 0.06 ms per stored item on top of
# ~5 ms), so provisioning 10,000 accounts one store each would take ~45 minutes; the write
# pattern tokend produces, which this run counts, is the same for either collection.
gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets \
  --method org.freedesktop.Secret.Service.SetAlias default /org/freedesktop/secrets/collection/session >/dev/null
dbus-monitor --session "type='method_call',interface='org.freedesktop.Secret.Collection',member='CreateItem'" \
  >"$work/writes.log" 2>/dev/null &
pids+=($!)

start_world "$lifetime"

note "provisioning $accounts accounts, first tokens spread over ${lifetime}s"
echo "PROVISION_START=$(stamp)" >"$work/phases.env"
$scale provision "$emulator" "$TOKEND_SOCKET" "$accounts" "$lifetime" >"$work/provision.json"
echo "WINDOW_START=$(stamp)" >>"$work/phases.env"

note "refreshing for $minutes min, a client asking $sample_rate times a second"
# Margin of an hour-long token: 300 s; a third of it left means a proactive refresh came late.
$scale sample "$TOKEND_SOCKET" "$accounts" $((minutes * 60)) "$sample_rate" "$work/sample.json" 100
echo "WINDOW_END=$(stamp)" >>"$work/phases.env"
echo "RSS_BEFORE_KILL=$(awk '/^VmRSS/ {print $2}' /proc/"$tokend"/status)" >>"$work/phases.env"

note "kill -9, restart"
kill -9 "$tokend"
wait "$tokend" 2>/dev/null || true
echo "RESTART=$(stamp)" >>"$work/phases.env"
tokend=$($scale startup "$bin/tokend" "$TOKEND_SOCKET" "$accounts" "$work/startup.json" "$work/tokend.log")
pids+=("$tokend")
$scale serve-all "$TOKEND_SOCKET" "$accounts" "$work/serve-all.json"
echo "SERVED_ALL=$(stamp)" >>"$work/phases.env"
echo "RSS_AFTER=$(awk '/^VmRSS/ {print $2}' /proc/"$tokend"/status)" >>"$work/phases.env"
sleep 2  # dbus-monitor's last lines
cp "$work/tokend.log" "$work/tokend.log.keep" 2>/dev/null || true

mkdir -p Benchmarks/results
out=Benchmarks/results/$(date -u +%Y-%m-%dT%H%MZ)-restart-$accounts.md
MACHINE="$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), Linux $(uname -r)" \
ACCOUNTS=$accounts MINUTES=$minutes LIFETIME=$lifetime "$python" - "$work" "$out" <<'PY'
import json, os, sys
from datetime import datetime, timezone
from pathlib import Path

run, out = Path(sys.argv[1]), Path(sys.argv[2])
phases = dict(l.split("=", 1) for l in (run / "phases.env").read_text().split())
def at(key):
    return datetime.strptime(phases[key], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
# dbus-monitor: "method call time=1764100000.123456 sender=... member=CreateItem"
writes = [float(line.split("time=")[1].split()[0]) for line in (run / "writes.log").read_text().splitlines()
          if "member=CreateItem" in line and "time=" in line]
# The fake's log: one line per request, ISO 8601 time first; refreshes go to the Secure Token API.
refreshes = []
for line in (run / "fake.log").read_text().splitlines():
    if "securetoken" in line:
        try:
            refreshes.append(datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp())
        except ValueError:
            pass

def within(times, start, end):
    return [t for t in times if start <= t < end]

def per_minute(times, start, end):
    minutes = max(1, int((end - start) // 60))
    counts = [0] * minutes
    for t in times:
        index = int((t - start) // 60)
        if 0 <= index < minutes:
            counts[index] += 1
    return counts

provision, sample = json.loads((run / "provision.json").read_text()), json.loads((run / "sample.json").read_text())
startup, served = json.loads((run / "startup.json").read_text()), json.loads((run / "serve-all.json").read_text())
w0, w1, r0, r1 = at("WINDOW_START"), at("WINDOW_END"), at("RESTART"), at("SERVED_ALL")
window_writes, window_minutes = within(writes, w0, w1), per_minute(writes, w0, w1)
window_refreshes = within(refreshes, w0, w1)
accounts = int(os.environ["ACCOUNTS"])
rows = [
    ("accounts, each its own user on the fake", f"{accounts:,}"),
    ("provisioning (user on the fake + `import`, 8 at a time; first tokens living 1/20 … 20/20 of an hour)",
     f"{provision['provisioned']:,} in {provision['provision_seconds']:.0f} s, {provision['provision_failed']} failed"),
    ("keyring writes while provisioning (two per import since 2026-11-26: the refresh token, then its first ID token)",
     f"{len(within(writes, at('PROVISION_START'), w0)):,}"),
    (f"refreshes the fake saw in the {os.environ['MINUTES']}-minute window",
     f"{len(window_refreshes):,} ({len(window_refreshes) / max(1, (w1 - w0) / 60):.0f}/min)"),
    ("keyring writes in the window (coalesced ID-token write-backs)",
     f"{len(window_writes):,}: {len(window_writes) / max(1, (w1 - w0) / 60):.1f}/min, busiest minute {max(window_minutes)}"),
    ("keyring writes per minute, minute by minute", ", ".join(str(c) for c in window_minutes)),
    ("sampling client: answers / failed / expired / late (< 100 s left)",
     f"{sample['answers']:,} / {sample['failed']} / {sample['expired']} / {sample['late']}"),
    ("sampling client: least validity left, latency p50 / p99", f"{sample['min_seconds_left']} s, {sample['latency_ms_p50']} / {sample['latency_ms_p99']} ms"),
    ("tokend RSS before `kill -9`", f"{int(phases['RSS_BEFORE_KILL']) / 1024:.1f} MB"),
    ("restart: socket answers / READY=1 / no account waiting for the keyring",
     f"{startup.get('socket_ms')} / {startup.get('ready_ms')} / {startup.get('all_restored_ms')} ms"),
    ("after the restart, every account asked once (`min_valid` 60, 16 at a time)",
     f"{served['served']:,} of {served['asked']:,} served in {served['serve_all_seconds']} s; errors {served['errors'] or 'none'}"),
    ("of which needed a refresh with the stored refresh token (the fake's count)", f"{len(within(refreshes, r0, r1)):,}"),
    ("keyring writes from the restart until every account was served", f"{len(within(writes, r0, r1)):,}"),
    ("tokend RSS after serving every account", f"{int(phases['RSS_AFTER']) / 1024:.1f} MB"),
]
lines = [
    f"# Restart: {accounts:,} accounts with hour-long tokens, {os.environ['MINUTES']} minutes, `kill -9`, restart",
    "",
    f"Machine: {os.environ['MACHINE']}. `scripts/bench --restart {accounts} --minutes {os.environ['MINUTES']}`, release binaries, "
    "the fake Firebase, a private gnome-keyring whose default collection is its in-memory one "
    "(Benchmarks/restart.sh says why). Keyring writes: Secret Service `CreateItem` calls seen on the bus.",
    "",
    "| measure | value |",
    "| --- | ---: |",
] + [f"| {a} | {b} |" for a, b in rows] + [""]
out.write_text("\n".join(lines))
print(out.read_text())
PY
note "wrote $out"
