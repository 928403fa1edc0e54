#!/usr/bin/env bash
# What one Secret Service write costs gnome-keyring as its collection grows: the bound on keyring
# writes a second, and so on refreshes a second, since tokend stores every refreshed session.
# CPU time of gnome-keyring-daemon itself (/proc/PID/stat), which other load does not inflate.
# Run in a private session:
#   scripts/lib/private-session -- Benchmarks/support/keyring-cost.sh [MAX_ITEMS]
set -euo pipefail
max=${1:-2000}
pid=$(gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
  --method org.freedesktop.DBus.GetConnectionUnixProcessID org.freedesktop.secrets | sed 's/.*uint32 \([0-9]*\).*/\1/')
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
# A secret the size of a stored Firebase session (refresh token and ID token); random, worthless.
secret='{"refresh_token":"'$(head -c 300 /dev/urandom | base64 -w0)'","id_token":"'$(head -c 900 /dev/urandom | base64 -w0)'"}'
store() { printf '%s' "$secret" | secret-tool store --label="tokend $1" application tokend account "$1"; }
# Per size: 50 replacing stores (what a refresh does) and 50 lookups (what a restore does).
rounds=50
n=0
echo "| items in the collection | CPU per store | CPU per lookup | stores/s one whole core sustains |"
echo "| ---: | ---: | ---: | ---: |"
for size in 100 250 500 1000 2000 5000 10000; do
  [ "$size" -le "$max" ] || break
  while [ "$n" -lt "$size" ]; do n=$((n + 1)); store "a$n"; done
  t0=$(ticks)
  for i in $(seq "$rounds"); do store "a$i"; done
  t1=$(ticks)
  for i in $(seq "$rounds"); do secret-tool lookup application tokend account "a$i" >/dev/null; done
  t2=$(ticks)
  awk -v n="$n" -v s=$((t1 - t0)) -v l=$((t2 - t1)) -v hz="$hz" -v r="$rounds" 'BEGIN {
    store = 1000 * s / hz / r; lookup = 1000 * l / hz / r
    printf "| %d | %.1f ms | %.1f ms | %.0f |\n", n, store, lookup, store > 0 ? 1000 / store : 0 }'
done
