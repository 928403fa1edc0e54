#!/usr/bin/env bash
# Rewrites scripts/lib/tokend-order.txt (lld's symbol order for tokend, scripts/lib/release-build.sh)
# from what the release daemon runs and writes while serving (Benchmarks/support/tokend_order.py):
# - its functions: callgrind through start-up and an import (dumped, for names only), then 20
#   `tokenctl token` calls, 3 s of 4 persistent and 3 s of 4 per-request clients and the idle
#   release after them;
# - its zero-initialised variables that hold something after the same, run natively (its memory
#   is read: root, or kernel.yama.ptrace_scope = 0).
# Needs valgrind (apt-get install -y valgrind) and what scripts/bench builds (the release binaries,
# the fake, loadgen). Rerun it when the serving path changes: a name the code no longer has is
# skipped, so a stale list costs memory, never a build.
#   scripts/lib/private-session -- Benchmarks/support/tokend_order.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/release-build.sh
bin=$(release_bin_dir)
tokend=$(swift build -c release --scratch-path "$TOKEND_SCRATCH" --show-bin-path)/tokend  # unstripped
fake=$(swift build -c release --scratch-path "$TOKEND_SCRATCH" --show-bin-path)/tokend-fake-firebase
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export HOME=$work/home TMPDIR=$work/tmp TOKEND_SOCKET=$work/tokend.sock TOKEND_CONFIG=$work/config.toml
mkdir -p "$HOME" "$TMPDIR"
# valgrind cannot read the Swift toolchain's DWARF: a copy with the symbol table only.
strip --strip-debug -o "$work/tokend" "$tokend"
"$fake" --create-user >"$work/fake.out" 2>/dev/null &
for _ in $(seq 100); do grep -q '^UID=' "$work/fake.out" && break; sleep 0.1; done
emulator=$(sed -n 's/^FIREBASE_AUTH_EMULATOR_HOST=//p' "$work/fake.out")
printf '[account.bench]\nprovider = "firebase"\napi_key = "k"\nemulator = "%s"\n' "$emulator" >"$TOKEND_CONFIG"
# Starts "$@" as the daemon (in $daemon), imports the account and asks for one token.
start_daemon() {
  "$@" 2>"$work/daemon.log" &
  daemon=$!
  for _ in $(seq 600); do "$bin/tokenctl" list >/dev/null 2>&1 && break; sleep 0.1; done
  sed -n 's/^REFRESH_TOKEN=//p' "$work/fake.out" | tr -d '\n' | "$bin/tokenctl" import bench >/dev/null
  "$bin/tokenctl" token bench >/dev/null
}
serve() {
  for _ in $(seq 20); do "$bin/tokenctl" token bench >/dev/null; done
  "$bin/loadgen" --socket "$TOKEND_SOCKET" --protocol tokend --mode persistent --clients 4 --seconds 3 --account bench >/dev/null
  "$bin/loadgen" --socket "$TOKEND_SOCKET" --protocol tokend --mode per-request --clients 4 --seconds 3 --account bench >/dev/null
  sleep 15 # the idle release after the burst
}
stop_daemon() {
  kill "$daemon"
  wait "$daemon" || true
}
start_daemon valgrind --tool=callgrind --dump-instr=yes --demangle=no --callgrind-out-file="$work/out" "$work/tokend"
sleep 40 # past start-up's and the import's idle releases
callgrind_control --dump=startup "$daemon" >/dev/null 2>&1
serve
stop_daemon
python3 Benchmarks/support/tokend_order.py code "$work/tokend" "$work/out.1" "$work/out" >"$work/order.txt"
start_daemon "$work/tokend"
serve
python3 Benchmarks/support/tokend_order.py data "$work/tokend" "$daemon" >>"$work/order.txt"
stop_daemon
mv "$work/order.txt" scripts/lib/tokend-order.txt
wc -l scripts/lib/tokend-order.txt
