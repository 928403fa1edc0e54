# Shared by Benchmarks/scale.sh and Benchmarks/restart.sh (sourced with RUN_NAME set): the work
# directory of support/work.sh with tokend's socket and configuration. Both take ACCOUNTS MINUTES.
accounts=${1:?accounts} minutes=${2:?minutes}
bin=$BENCH_BIN
python=$PWD/.venv-bench/bin/python
scale="$python Benchmarks/support/scale.py"
source Benchmarks/support/work.sh
export TOKEND_SOCKET=$work/tokend.sock TOKEND_CONFIG=$work/config.toml
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
