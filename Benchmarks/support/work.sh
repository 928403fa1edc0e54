# Shared by every benchmark run script (sourced with RUN_NAME set): a work directory, the
# processes in `pids` killed and the directory removed on exit, `note`, and a bounded wait for
# something to come up.
work=$(mktemp -d -t "tokend-$RUN_NAME.XXXXXX")
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
