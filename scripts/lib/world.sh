#!/usr/bin/env bash
# The one world of tokend's shell scripts: the acceptance checks they report with, and the fake
# Firebase, its accounts and its control plane, and the daemon they start in it. Sourced by
# test-systemd, test-package (and its clean root), test-install-sh, test-secret-services,
# test-mail, test-real-oidc and demo; run as a command by the chaos driver (scripts/lib/chaos.py):
#   scripts/lib/world.sh fake ARGS...             exec tokend-fake-firebase ARGS (its first line
#                                                 on stdout: FIREBASE_AUTH_EMULATOR_HOST=HOST:PORT)
#   scripts/lib/world.sh account NAME EMULATOR [KEY]   print a config section for an account on it
# Binaries come from $bin, else $TOKEND_BIN_DIR, else `swift build --show-bin-path`.
# The checks: the caller sets failures=0 and exits 1 when it is not 0 at the end.

ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
info() { echo "      $*"; }
# check NAME COMMAND...: one acceptance point.
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
# poll SECONDS COMMAND...: until the command succeeds or the deadline passes (no guessed sleeps).
poll() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.1; done
}
quiet() { "$@" >/dev/null 2>&1; }
alive() { kill -0 "$1" 2>/dev/null; }
dead() { ! kill -0 "$1" 2>/dev/null; }

# field NAME: the JSON field NAME of stdin (empty when absent or not JSON).
field() {
  python3 -c 'import json, sys
try: v = json.load(sys.stdin).get(sys.argv[1], "")
except ValueError: v = ""
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

world_bin() { printf '%s' "${bin:-${TOKEND_BIN_DIR:-$(swift build --show-bin-path)}}"; }

# start_fake DIR ARGS...: tokend-fake-firebase ARGS in the background, stdin from /dev/null, its
# stdout in DIR/fake.out and its log in DIR/fake.log. Once it listens (30 s at most, or with
# --create-user once it printed the user): fake_pid, emulator (HOST:PORT) and, with
# --create-user, uid and the user's refresh token in fake_refresh_token.
start_fake() {
  local dir=$1 ready='^FIREBASE_AUTH_EMULATOR_HOST='; shift
  case " $* " in *" --create-user "*) ready='^UID=' ;; esac
  "$(world_bin)/tokend-fake-firebase" "$@" >"$dir/fake.out" 2>"$dir/fake.log" </dev/null &
  fake_pid=$!
  poll 30 grep -q "$ready" "$dir/fake.out" || { echo "world: the fake Firebase did not start; see $dir/fake.log" >&2; return 1; }
  emulator=$(sed -n 's/^FIREBASE_AUTH_EMULATOR_HOST=//p' "$dir/fake.out")
  uid=$(sed -n 's/^UID=//p' "$dir/fake.out")
  fake_refresh_token=$(sed -n 's/^REFRESH_TOKEN=//p' "$dir/fake.out")
}

# firebase_account NAME [API_KEY]: the config section of an account on the fake ($emulator).
firebase_account() { printf '[account.%s]\nprovider = "firebase"\napi_key = "%s"\nemulator = "%s"\n\n' "$1" "${2:-test-api-key}" "$emulator"; }

# fake_control METHOD PATH [JSON]: the fake's control plane (/_fake/PATH), its answer on stdout.
fake_control() { curl -sf -X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} "http://$emulator/_fake/$2"; }

# new_refresh_token: a new anonymous user on the fake, signed in: its refresh token.
new_refresh_token() { fake_control POST users '{}' | field refresh_token; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case ${1:-} in
    fake) shift; exec "$(world_bin)/tokend-fake-firebase" "$@" ;;
    account) [ $# -ge 3 ] || { echo "usage: world.sh account NAME EMULATOR [KEY]" >&2; exit 64; }; emulator=$3; firebase_account "$2" "${4:-test-api-key}" ;;
    *) echo "usage: world.sh fake ARGS... | account NAME EMULATOR [KEY] (or source it)" >&2; exit 64 ;;
  esac
fi
