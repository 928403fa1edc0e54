#!/bin/bash
# Profiles the release tokend (as scripts/install ships it; build it with scripts/bench first)
# under the load generator: perf record of tokend while loadgen runs.
#   scripts/lib/private-session -- Benchmarks/support/profile-connections.sh MODE CLIENTS [LINES]
# MODE is per-request or persistent; the report goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$PWD/.build-release-bin
fake=$(swift build -c release --scratch-path .build-tokend --show-bin-path)/tokend-fake-firebase
work=$(mktemp -d)
export TOKEND_SOCKET=$work/tokend.sock TOKEND_CONFIG=$work/config.toml
"$fake" --create-user >"$work/fake.out" 2>/dev/null &
fakepid=$!
for i in $(seq 100); do grep -q '^UID=' "$work/fake.out" && break; sleep 0.05; done
emulator=$(sed -n 's/^FIREBASE_AUTH_EMULATOR_HOST=//p' "$work/fake.out")
rt=$(sed -n 's/^REFRESH_TOKEN=//p' "$work/fake.out")
printf '[account.bench]\nprovider = "firebase"\napi_key = "k"\nemulator = "%s"\n' "$emulator" >"$TOKEND_CONFIG"
"$bin/tokend" 2>"$work/tokend.log" &
tokend=$!
for i in $(seq 100); do "$bin/tokenctl" list >/dev/null 2>&1 && break; sleep 0.05; done
printf '%s' "$rt" | "$bin/tokenctl" import bench >/dev/null
"$bin/tokenctl" token bench >/dev/null
perf record -F 1999 -g -p "$tokend" -o "$work/perf.data" -- sleep 6 2>/dev/null &
perfpid=$!
sleep 0.5
t0=$(awk "{print \$14+\$15}" /proc/$tokend/stat)
/usr/bin/time -f "loadgen CPU: user %U s, system %S s, wall %e s" "$bin/loadgen" --socket "$TOKEND_SOCKET" --protocol tokend --mode "$1" --clients "$2" --seconds 5 --account bench
wait $perfpid || true
echo "tokend CPU during the run: $(( $(awk "{print \$14+\$15}" /proc/$tokend/stat) - t0 )) ticks (100 a second)"
perf report -i "$work/perf.data" --stdio --no-children -g none --sort dso,symbol 2>/dev/null | grep -v "^$" | head -${3:-60}
echo "=== by dso"
perf report -i "$work/perf.data" --stdio --no-children -g none --sort dso 2>/dev/null | grep -v "^#" | grep -v "^$" | head -15
kill $tokend $fakepid
