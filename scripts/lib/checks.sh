# Shared by scripts/test-systemd and scripts/test-package: one line per acceptance point, "ok" or
# "FAIL"; the caller sets failures=0 and exits 1 when it is not 0 at the end.

ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
# check NAME COMMAND...: one acceptance point.
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
# poll SECONDS COMMAND...: until the command succeeds or the deadline passes (no guessed sleeps).
poll() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.1; done
}
quiet() { "$@" >/dev/null 2>&1; }
