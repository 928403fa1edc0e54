#!/usr/bin/env bash
# The scale run of scripts/bench --scale: ACCOUNTS accounts with 60-second tokens against the fake
# Firebase for MINUTES minutes while a client asks random accounts for tokens; then a restart
# with every session stored. Runs inside scripts/bench's private session (D-Bus, keyring) with
# BENCH_BIN and BENCH_FAKE set; writes Benchmarks/results/<UTC time>-scale-<ACCOUNTS>.md.
set -euo pipefail
# Sampling rate, requests a second: a busy client, small beside the refresh load it checks.
sample_rate=20

RUN_NAME=scale
source Benchmarks/support/run.sh
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
keyring_pid() {
  gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.GetConnectionUnixProcessID org.freedesktop.secrets | sed 's/.*uint32 \([0-9]*\).*/\1/'
}

# Every token lives 60 s, so tokend refreshes each account about every 40 s (margin 20 s).
start_world 60

note "provisioning $accounts accounts (a user each on the fake, imported over the socket)"
$scale provision "$emulator" "$TOKEND_SOCKET" "$accounts" >"$work/provision.json"

note "sampling for $minutes min at $sample_rate requests/s"
keyring=$(keyring_pid)
window_start=$(date -u +%FT%TZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s%N) tokend0=$(cpu_ticks "$tokend") fake0=$(cpu_ticks "$fake") keyring0=$(cpu_ticks "$keyring")
$scale sample "$TOKEND_SOCKET" "$accounts" $((minutes * 60)) "$sample_rate" "$work/sample.json"
t1=$(date +%s%N) tokend1=$(cpu_ticks "$tokend") fake1=$(cpu_ticks "$fake") keyring1=$(cpu_ticks "$keyring")
window_end=$(date -u +%FT%TZ)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
$scale status "$TOKEND_SOCKET" "$work/status.json"
ticks=$(getconf CLK_TCK)
{
  echo "ACCOUNTS=$accounts"
  echo "MINUTES=$minutes"
  echo "SAMPLE_RATE=$sample_rate"
  echo "STAMP=$window_start"
  echo "MACHINE=$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), Linux $(uname -r)"
  echo "LOAD_BEFORE=$load_before"
  echo "LOAD_AFTER=$load_after"
  # CPU shares of one core over the sampling window.
  echo "TOKEND_CPU=$(awk -v a="$tokend0" -v b="$tokend1" -v t="$ticks" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * (b - a) / t / (ns / 1e9)}')"
  echo "FAKE_CPU=$(awk -v a="$fake0" -v b="$fake1" -v t="$ticks" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * (b - a) / t / (ns / 1e9)}')"
  echo "KEYRING_CPU=$(awk -v a="$keyring0" -v b="$keyring1" -v t="$ticks" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * (b - a) / t / (ns / 1e9)}')"
  echo "TOKEND_RSS=$(awk '/^VmRSS/ {print $2}' /proc/"$tokend"/status)"
  echo "TOKEND_FDS=$(ls /proc/"$tokend"/fd | wc -l)"
  echo "TOKEND_FD_LIMIT=$(awk '/^Max open files/ {print $4}' /proc/"$tokend"/limits)"
  echo "TOKEND_THREADS=$(ls /proc/"$tokend"/task | wc -l)"
  echo "KEYRING_RSS=$(awk '/^VmRSS/ {print $2}' /proc/"$keyring"/status)"
} >"$work/facts.env"
# Refreshes per second as the fake saw them, inside the sampling window (its log: one line per
# request, ISO 8601 time first; refreshes go to the Secure Token API).
awk -v from="$window_start" -v to="$window_end" '$1 >= from && $1 < to && /securetoken/ {print $1}' "$work/fake.log" \
  | sort | uniq -c | awk '{print $1}' >"$work/refreshes-per-second"

note "restarting tokend with $accounts stored sessions"
kill "$tokend"
wait "$tokend" 2>/dev/null || true
tokend=$($scale startup "$bin/tokend" "$TOKEND_SOCKET" "$accounts" "$work/startup.json" "$work/tokend.log")
pids+=("$tokend")
echo "TOKEND_RSS_RESTARTED=$(awk '/^VmRSS/ {print $2}' /proc/"$tokend"/status)" >>"$work/facts.env"

mkdir -p Benchmarks/results
out=Benchmarks/results/$(date -u +%Y-%m-%dT%H%MZ)-scale-$accounts.md
"$python" Benchmarks/support/scale_report.py "$work" "$out"
note "wrote $out"
