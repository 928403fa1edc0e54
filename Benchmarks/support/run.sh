# Shared by Benchmarks/scale.sh and Benchmarks/restart.sh (sourced with RUN_NAME set): a work
# directory with tokend's socket and configuration, processes killed and the directory removed
# on exit, and a bounded wait for something to come up. Both take ACCOUNTS MINUTES.
accounts=${1:?accounts} minutes=${2:?minutes}
bin=$BENCH_BIN
python=$PWD/.venv-bench/bin/python
scale="$python Benchmarks/support/scale.py"
work=$(mktemp -d -t "tokend-$RUN_NAME.XXXXXX")
export TOKEND_SOCKET=$work/tokend.sock TOKEND_CONFIG=$work/config.toml
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
note() { echo "$RUN_NAME: $*" >&2; }
# wait_for WHAT COMMAND...: until the command succeeds, for at most 30 s.
wait_for() {
  local what=$1; shift
  for _ in $(seq 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "$RUN_NAME: $what did not come up" >&2; exit 70
}
# start_world LIFETIME: the fake Firebase minting LIFETIME-second tokens, a configuration of
# $accounts Firebase accounts a1… on it, and tokend; sets fake, emulator and tokend.
start_world() {
  "$BENCH_FAKE" --lifetime "$1" >"$work/fake.out" 2>"$work/fake.log" &
  fake=$!
  pids+=("$fake")
  wait_for "the fake Firebase" grep -q '^FIREBASE_AUTH_EMULATOR_HOST=' "$work/fake.out"
  emulator=$(sed -n 's/^FIREBASE_AUTH_EMULATOR_HOST=//p' "$work/fake.out")
  for i in $(seq "$accounts"); do
    printf '[account.a%s]\nprovider = "firebase"\napi_key = "k"\nemulator = "%s"\n' "$i" "$emulator"
  done >"$TOKEND_CONFIG"
  "$bin/tokend" 2>>"$work/tokend.log" &
  tokend=$!
  pids+=("$tokend")
  wait_for tokend "$bin/tokenctl" list
}
