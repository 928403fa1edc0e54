#!/usr/bin/env bash
# The side-by-side run of scripts/bench --against TOKEND (issue 49's bar: `token` on the main
# socket no slower than before). Two tokend release builds, this tree's ($BENCH_BIN/tokend) and
# the other ($BENCH_AGAINST, a stripped copy of TOKEND), each with one account holding a cached
# token on the same fake Firebase, take the main-socket load points (1 and 64 clients,
# per-request and persistent, Benchmarks/loadgen.c) in turn: ROUNDS rounds, each point run against
# both daemons back to back, the order swapped every round, so that the shared machine's load
# moves both sides of a ratio alike. Runs inside scripts/bench's private session; writes
# Benchmarks/results/<UTC time>-against.md.
set -euo pipefail
rounds=${1:?rounds}
bin=$BENCH_BIN
# Per load point and daemon, seconds: scripts/bench's own point length.
point_seconds=5
# The report needs only the standard library.
python=python3
RUN_NAME=against
source Benchmarks/support/work.sh
export HOME=$work/home
mkdir -p "$HOME"

"$BENCH_FAKE" --create-user >"$work/fake.out" 2>/dev/null &
pids+=($!)
wait_for "the fake Firebase" grep -q '^UID=' "$work/fake.out"
emulator=$(sed -n 's/^FIREBASE_AUTH_EMULATOR_HOST=//p' "$work/fake.out")
refresh_token=$(sed -n 's/^REFRESH_TOKEN=//p' "$work/fake.out")

# start_daemon SIDE BINARY: tokend with its own socket, configuration and state directory (the
# store records and audit of today's tree), one account named SIDE imported with the fake's user.
# "old" and "new" are as long as each other, so both request lines and replies are the same size.
declare -A socket
start_daemon() {
  local side=$1 binary=$2
  socket[$side]=$work/$side.sock
  mkdir -p "$work/$side-state"
  printf '[account.%s]\nprovider = "firebase"\napi_key = "k"\nemulator = "%s"\n' "$side" "$emulator" >"$work/$side.toml"
  TOKEND_SOCKET=${socket[$side]} TOKEND_CONFIG=$work/$side.toml XDG_STATE_HOME=$work/$side-state \
    "$binary" 2>>"$work/$side.log" &
  pids+=($!)
  wait_for "tokend ($side)" env TOKEND_SOCKET="${socket[$side]}" "$bin/tokenctl" list
  printf '%s' "$refresh_token" | TOKEND_SOCKET=${socket[$side]} "$bin/tokenctl" import "$side" >/dev/null
  # The first token is fetched here; the load points are served from the cache.
  TOKEND_SOCKET=${socket[$side]} "$bin/tokenctl" token "$side" >/dev/null
}
start_daemon old "$BENCH_AGAINST"
start_daemon new "$bin/tokend"
reply_bytes() {
  printf '{"op":"token","account":"%s","min_valid":60}\n' "$1" | socat - "UNIX-CONNECT:${socket[$1]}" | wc -c
}

{
  echo "STAMP=$(date -u +%FT%TZ)"
  echo "MACHINE=$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), Linux $(uname -r)"
  echo "LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "REPLY_OLD=$(reply_bytes old)"
  echo "REPLY_NEW=$(reply_bytes new)"
  echo "ROUNDS=$rounds"
  echo "POINT_SECONDS=$point_seconds"
} >"$work/facts.env"

# loadgen.tsv: ROUND SIDE then loadgen's line.
: >"$work/loadgen.tsv"
for round in $(seq "$rounds"); do
  note "round $round of $rounds"
  order="old new"
  [ $((round % 2)) -eq 0 ] && order="new old"
  for clients in 1 64; do
    for mode in per-request persistent; do
      for side in $order; do
        printf '%s\t%s\t' "$round" "$side" >>"$work/loadgen.tsv"
        "$bin/loadgen" --socket "${socket[$side]}" --protocol tokend --mode "$mode" --clients "$clients" \
          --seconds "$point_seconds" --account "$side" | tee -a "$work/loadgen.tsv" >&2
      done
    done
  done
done
echo "LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/facts.env"

mkdir -p Benchmarks/results
out=Benchmarks/results/$(date -u +%Y-%m-%dT%H%MZ)-against.md
AGAINST_LABEL=${BENCH_AGAINST_LABEL:-$BENCH_AGAINST} "$python" Benchmarks/support/against_report.py "$work" "$out"
note "wrote $out"
