# A clean Debian 12 root, as a new user's machine starts (issue 46), for scripts/test-package:
# `debootstrap --variant=minbase bookworm` from the mirror apt uses here, built once and kept as a
# tarball under /var/cache/tokend-test/, keyed by debootstrap's version and the ISO week (so the
# root's packages are never more than a week behind Debian 12's point and security updates).

CLEAN_ROOT_CACHE=/var/cache/tokend-test

# clean_root_mirror [SUITE]: the URI apt here fetches SUITE (default bookworm) from, in deb822
# (sources.list.d/*.sources) or one-line (sources.list) form; Debian's own mirror otherwise.
clean_root_mirror() {
  local suite=${1:-bookworm} mirror
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk -v suite="$suite" '/^$/ {uri = ""} /^URIs:/ {uri = $2} /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite && uri != "") { print uri; exit } }')
  [ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list 2>/dev/null \
    | awk -v suite="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) { print $i; exit } }')
  echo "${mirror:-http://deb.debian.org/debian}"
}

# clean_root_tarball: the cached root's tarball (built if this week's is missing), its path on stdout.
clean_root_tarball() {
  local key tarball build security
  key="bookworm-minbase-debootstrap_$(dpkg-query -W -f='${Version}' debootstrap)-$(date -u +%G-W%V)"
  tarball="$CLEAN_ROOT_CACHE/$key.tar.gz"
  if [ ! -s "$tarball" ]; then
    mkdir -p "$CLEAN_ROOT_CACHE"
    build=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$build/root" "$(clean_root_mirror)" >"$build/debootstrap.log" 2>&1 \
      || { tail -20 "$build/debootstrap.log" >&2; rm -rf "$build"; return 1; }
    # Point and security updates, as a Debian 12 installation has them.
    security=$(clean_root_mirror bookworm-security)
    {
      echo "deb $(clean_root_mirror) bookworm main"
      echo "deb $(clean_root_mirror bookworm-updates) bookworm-updates main"
      [ "$security" = "http://deb.debian.org/debian" ] || echo "deb $security bookworm-security main"
    } >"$build/root/etc/apt/sources.list"
    cp /etc/resolv.conf "$build/root/etc/resolv.conf"
    chroot "$build/root" apt-get update -qq >"$build/update.log" 2>&1 || { cat "$build/update.log" >&2; rm -rf "$build"; return 1; }
    chroot "$build/root" apt-get clean
    tar -C "$build/root" -czf "$tarball.new" . && mv "$tarball.new" "$tarball"
    rm -rf "$build"
    # Last week's root is no use any more.
    find "$CLEAN_ROOT_CACHE" -maxdepth 1 -name 'bookworm-minbase-*.tar.gz' ! -name "$key.tar.gz" -delete
  fi
  echo "$tarball"
}

# clean_root_enter TARBALL DIR: the root unpacked into DIR, with /proc, /sys, /dev and /dev/pts,
# and a policy-rc.d that keeps packages from starting system services in it.
clean_root_enter() {
  local tarball=$1 dir=$2
  mkdir -p "$dir"
  tar -C "$dir" -xzf "$tarball"
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 0755 "$dir/usr/sbin/policy-rc.d"
  mount -t proc proc "$dir/proc"
  mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys"
  mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev"
}

# clean_root_leave DIR: kills what still runs in DIR (a mount in use would stay), unmounts every
# mount under it, deepest first, then removes DIR.
clean_root_leave() {
  local dir=$1 pid mountpoint
  [ -d "$dir" ] || return 0
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$dir" ] && kill -9 "$pid" 2>/dev/null
  done
  for mountpoint in $(awk -v dir="$dir/" 'index($2, dir) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$mountpoint" 2>/dev/null || umount -l "$mountpoint"
  done
  awk -v dir="$dir/" 'index($2, dir) == 1 {found = 1} END {exit found}' /proc/mounts && rm -rf "$dir"
}

# clean_root_pulls DIR APT-ARGUMENTS...: what `apt-get install APT-ARGUMENTS` would add in DIR,
# as "N packages, SIZE" (apt's own figures: a simulation, and the size it asks before installing).
clean_root_pulls() {
  local dir=$1 count size
  shift
  count=$(clean_root_pulled "$dir" "$@" | wc -w)
  size=$(chroot "$dir" env LC_ALL=C apt-get install --assume-no "$@" 2>&1 \
    | sed -n 's/^After this operation, \(.*\) of additional disk space will be used\./\1/p')
  echo "$count packages, ${size:-0 B}"
}

# clean_root_pulled DIR APT-ARGUMENTS...: the names of the packages it would add.
clean_root_pulled() {
  local dir=$1
  shift
  chroot "$dir" env LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get install -s "$@" 2>&1 | awk '$1 == "Inst" {print $2}' | sort | tr '\n' ' '
}
