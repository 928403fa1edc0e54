# scripts/test-package's clean-root path (issue 46): what a new user meets on a minimal Debian 12
# (clean-root.sh's root), with the release tarball and the package, as apt and the shells come by
# default. Sourced by test-package (check, poll, failures); `clean_root_checks DEB TARBALL BIN`.

# as_user COMMAND...: COMMAND in the root as alice (uid 1000), in a login-like environment.
as_user() {
  chroot --userspec=1000:1000 "$croot" env -i HOME=/home/alice USER=alice LOGNAME=alice LANG=C.UTF-8 \
    PATH=/home/alice/.local/bin:/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR=/home/alice/run \
    ${croot_env:-} "$@"
}
in_root() { chroot "$croot" env LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"; }

# The completion engines, as each shell runs them on Tab after "tokenctl token " (account names
# come from the running tokend). bash: bash-completion's loader, then the function `complete -p`
# names, with the COMP_* variables a Tab sets.
complete_bash() {
  as_user bash -c '. /usr/share/bash-completion/bash_completion
    __load_completion tokenctl || exit 1
    function=$(complete -p tokenctl | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
    COMP_LINE="tokenctl token " COMP_POINT=15 COMP_WORDS=(tokenctl token "") COMP_CWORD=2 COMP_TYPE=9 COMP_KEY=9
    "$function" tokenctl "" token 2>&1
    printf "%s\n" "${COMPREPLY[@]}"'
}
complete_fish() { as_user fish -c 'complete -C "tokenctl token "' 2>&1; }
# zsh: an interactive zsh (with the user's ~/.zshrc, which runs compinit) on a pty, Tab after
# the words; its compadd is wrapped to print each match it is given as <<match>>.
complete_zsh() {
  cat >"$croot/tmp/complete.zsh" <<'EOF_ZSH'
zmodload zsh/zpty
zpty -b z "zsh -i"
zpty -w z 'PS1=; compadd() { local -a _found; builtin compadd -O _found "$@"; print -rl -- "<<"${^_found}">>"; builtin compadd "$@" }'
zpty -wn z "tokenctl token "$'\t'
zpty -w z ""
zpty -w z "print EN""D; exit"
# Polled until zsh says END (a deadline, not a guess: a loaded machine only takes longer).
output="" deadline=$(( SECONDS + 30 ))
while (( SECONDS < deadline )); do
  if zpty -r -t z chunk; then output+=$chunk; [[ $output == *END* ]] && break; else sleep 0.1; fi
done
print -r -- "$output"
EOF_ZSH
  as_user zsh -f /tmp/complete.zsh 2>&1 | tr -d '\r' | grep -o '<<[A-Za-z0-9_.@-]*>>' | tr -d '<>' | sort -u
}

# completions_work WHERE: every shell's engine offers both configured accounts.
completions_work() {
  local where=$1 shell out
  for shell in bash zsh fish; do
    out=$("complete_$shell")
    check "$where: $shell completes account names after 'tokenctl token '${out:+ (got: $(echo $out | cut -c1-120))}" \
      bash -c "grep -qx 'home' <<<'$out' && grep -qx 'work' <<<'$out'" 
  done
}

# A config with two accounts on the fake Firebase (the host's: the root shares its network).
write_config() {
  as_user sh -c "mkdir -p -m 0700 ~/.config/tokend ~/run && printf '[account.work]\nprovider = \"firebase\"\napi_key = \"test-api-key\"\nemulator = \"%s\"\n\n[account.home]\nprovider = \"firebase\"\napi_key = \"test-api-key\"\nemulator = \"%s\"\n' '$1' '$1' > ~/.config/tokend/config.toml"
}

clean_root_checks() {
  # Each step is a check that says ok or FAIL: one that fails must not end the run (test-package
  # runs under set -e and pipefail); `local -` keeps this to the function.
  local -
  set +e +o pipefail
  local deb=$1 tarball=$2 bin=$3 started=$SECONDS out status fix emulator refresh line
  local cached=yes
  source scripts/lib/clean-root.sh
  [ -n "$(ls "$CLEAN_ROOT_CACHE"/bookworm-minbase-*-"$(date -u +%G-W%V)".tar.gz 2>/dev/null)" ] || cached=no
  local image
  image=$(clean_root_tarball) || { fail "a clean Debian 12 root (debootstrap minbase)"; return; }
  croot=$(mktemp -d /var/tmp/tokend-clean-root.XXXXXX)
  trap 'clean_root_leave "$croot"; kill $(jobs -p) 2>/dev/null; rm -rf "$scratch"' EXIT
  clean_root_enter "$image" "$croot"
  # Downloads are kept between runs beside the root (apt's own cache, bind-mounted).
  mkdir -p "$CLEAN_ROOT_CACHE/archives/partial"
  mount --bind "$CLEAN_ROOT_CACHE/archives" "$croot/var/cache/apt/archives"
  echo "note  clean root ready in $((SECONDS - started)) s (cached: $cached; $image)"
  in_root useradd -m -u 1000 -s /bin/bash alice
  cp "$deb" "$tarball" "$croot/tmp/"
  chmod 0644 "$croot/tmp/"*
  deb=/tmp/$(basename "$deb") tarball=/tmp/$(basename "$tarball")

  # --- 2. What each kind of user pulls in with the package, measured on the minimal root -------
  echo "note  desktop (a Secret Service runs already): apt install ./tokend.deb pulls in $(clean_root_pulls "$croot" "$deb")"
  local pulled
  pulled=$(clean_root_pulled "$croot" "$deb")
  check "the package with apt's defaults pulls in no keyring, GTK or init ($pulled)" \
    bash -c "! grep -Eq 'gnome-keyring|libgtk|systemd-sysv' <<<'$pulled'"
  echo "note  container: apt-get install --no-install-recommends ./tokend.deb pulls in $(clean_root_pulls "$croot" --no-install-recommends "$deb")"
  echo "note  server: apt install ./tokend.deb gnome-keyring dbus-user-session libsecret-tools pulls in $(clean_root_pulls "$croot" "$deb" gnome-keyring dbus-user-session libsecret-tools)"
  echo "note  server, no recommends: $(clean_root_pulls "$croot" --no-install-recommends "$deb" gnome-keyring dbus-user-session libsecret-tools)"

  # --- 1. The tarball on a minimal system: the prerequisite message, and its command ----------
  as_user tar -C /home/alice -xzf "$tarball"
  local tree
  tree=/home/alice/$(basename "$tarball" .tar.gz)
  out=$(as_user "$tree/install.sh" 2>&1) && status=0 || status=$?
  echo "$out" | sed 's/^/note  install.sh: /'
  check "the tarball's install.sh on a minimal Debian: exit 69, nothing installed" \
    bash -c "[ $status = 69 ] && [ ! -e '$croot/home/alice/.local/bin/tokend' ]"
  fix=$(sed -n 's/.*run install.sh again: sudo \(apt-get install .*\)$/\1/p' <<<"$out")
  check "it names libsecret and GLib and the one apt-get line (${fix:-none})" \
    bash -c "grep -q 'libsecret-1-0' <<<'$fix' && grep -q 'libglib2.0-0' <<<'$fix'"
  echo "note  the prerequisites pull in: $(clean_root_pulls "$croot" ${fix#apt-get install })"
  check "that line installs them" quiet in_root $fix -y
  # The shells a user completes in, as Debian packages them (bash's completion is a package).
  echo "note  bash-completion zsh fish pull in: $(clean_root_pulls "$croot" --no-install-recommends bash-completion zsh fish)"
  check "bash-completion, zsh and fish install" quiet in_root apt-get install -y --no-install-recommends bash-completion zsh fish
  out=$(as_user "$tree/install.sh" 2>&1) && status=0 || status=$?
  echo "$out" | sed 's/^/note  install.sh: /'
  check "then install.sh installs into ~/.local" bash -c "[ $status = 0 ] && [ -x '$croot/home/alice/.local/bin/tokend' ]"
  line=$(sed -n 's/^zsh: .*before compinit: \(fpath+=.*\)$/\1/p' <<<"$out")
  check "it says the zsh fpath line (~/.local is not on zsh's default fpath)" [ -n "$line" ]
  # zsh as Debian sets it up for a new user: zsh-newuser-install's recommended ~/.zshrc (compinit).
  as_user sh -c "{ echo '$line'; cat /etc/zsh/newuser.zshrc.recommended; } > ~/.zshrc"

  # --- 3. Completions of the tarball's install, in each shell ----------------------------------
  start_fake "$scratch" --lifetime 3600
  write_config "$emulator"
  # --- 6. `tokend &` then at once `tokenctl token`: tokenctl waits for the socket -------------
  refresh=$(new_refresh_token)
  as_user sh -c 'tokend 2>~/tokend.log & tokenctl list >/dev/null 2>~/list.err; echo $? > ~/list.status' 
  check "'tokend &' then at once 'tokenctl list': answered, not 69 ($(cat "$croot/home/alice/list.err"))" \
    [ "$(cat "$croot/home/alice/list.status")" = 0 ]
  check "tokend's log on a file (no journal): no <6> prefixes" bash -c "grep -q . '$croot/home/alice/tokend.log' && ! grep -q '^<[0-7]>' '$croot/home/alice/tokend.log'"
  grep -m1 'error=' "$croot/home/alice/tokend.log" | sed 's/^/note  no session bus: /'
  completions_work "tarball in ~/.local"

  # --- 7. install.sh --uninstall says what stays ------------------------------------------------
  out=$(as_user "$tree/install.sh" --uninstall 2>&1)
  echo "$out" | sed 's/^/note  install.sh --uninstall: /'
  check "install.sh --uninstall says enable links and a running tokend stay, and the command" \
    bash -c "grep -q 'disable --now tokend.socket' <<<'$out' && grep -q 'running tokend' <<<'$out'"
  as_user sh -c 'kill $(cat /proc/[0-9]*/stat 2>/dev/null | awk "\$2 == \"(tokend)\" {print \$1}") 2>/dev/null'
  poll 20 bash -c "! grep -qx tokend $croot/proc/[0-9]*/comm 2>/dev/null"

  # --- 2. The package with apt's defaults ------------------------------------------------------
  check "apt-get install ./tokend.deb (apt's defaults)" quiet in_root apt-get install -y "$deb"
  as_user sh -c 'tokend 2>~/tokend.log &'
  poll 30 test -S "$croot/home/alice/run/tokend/tokend.sock"
  completions_work "the package"
  as_user sh -c 'kill $(cat /proc/[0-9]*/stat 2>/dev/null | awk "\$2 == \"(tokend)\" {print \$1}") 2>/dev/null'

  # --- 4. The man pages: lint, whatis, the exit statuses ----------------------------------------
  local page exits
  exits=$(awk '/^### Exit codes/ {on = 1; next} on && /^#/ {exit} on && /^\| [0-9]+ \|/ {print $2}' README.md | tr '\n' ' ')
  for page in tokenctl tokend; do
    zcat "$croot/usr/share/man/man1/$page.1.gz" >"$scratch/$page.1"
    out=$(mandoc -T lint -W warning "$scratch/$page.1" 2>&1)
    check "mandoc -T lint $page.1: clean${out:+ ($(echo $out | cut -c1-200))}" [ -z "$out" ]
    out=$(lexgrog "$scratch/$page.1" 2>&1)
    check "lexgrog $page.1: a whatis line without quotes ($out)" bash -c "grep -q ': \"$page - ' <<<'$out' && ! grep -q \"$page - [\\\"']\" <<<'$out'"
    # Rendered as man shows it; checked from a file (the text has quotes and parentheses).
    MANWIDTH=200 man -l "$scratch/$page.1" 2>/dev/null | col -b >"$scratch/$page.txt"
    check "$page(1) has no empty list item (', )')" bash -c "! grep -q ', )' '$scratch/$page.txt'"
    check "$page(1) ends with its exit statuses" \
      bash -c "awk '/^EXIT STATUS/ {on = 1} on && /^AUTHORS/ {exit} on' '$scratch/$page.txt' | grep -Eq '^ +75[[:space:]]'"
  done
  awk '/^EXIT STATUS/ {on = 1; next} on && /^[A-Z]/ {exit} on' "$scratch/tokenctl.txt" >"$scratch/exits.txt"
  check "tokenctl(1)'s exit statuses are README's ($exits)" \
    bash -c "for code in $exits; do grep -Eq \"^ +\$code([[:space:]]|\$)\" '$scratch/exits.txt' || exit 1; done"
  awk '/^SYNOPSIS/ {on = 1; next} /^[A-Z]/ {on = 0} on' "$scratch/tokend.txt" >"$scratch/synopsis.txt"
  check "tokend(1)'s synopsis has no subcommand" bash -c "! grep -qi subcommand '$scratch/synopsis.txt'"

  # --- 5. Status while the keyring is locked (gnome-keyring as a server installs it) -----------
  check "gnome-keyring, dbus-user-session, libsecret-tools install" \
    quiet in_root apt-get install -y gnome-keyring dbus-user-session libsecret-tools
  # README quotes the figure; which systemd measured it matters (the rating changes between versions).
  echo "note  in the root, $(in_root systemctl --version | head -1): systemd-analyze security --offline=true" \
    "/usr/lib/systemd/user/tokend.service: $(in_root systemd-analyze security --offline=true /usr/lib/systemd/user/tokend.service 2>&1 | tail -1)"
  (umask 077; printf '%s\n' "$refresh" >"$croot/home/alice/refresh")
  chown 1000:1000 "$croot/home/alice/refresh"
  # gnome-keyring as the bus activates it for a user who never logged in to a desktop: no login
  # keyring, so nothing can be written without a prompt (which tokend never makes): locked.
  as_user dbus-run-session -- sh -c '
    tokend 2>~/locked.log &
    tokenctl import work <~/refresh >~/import.out 2>&1; echo "import: $?" >>~/import.out
    tokenctl status >~/status.out 2>&1
    kill $!; wait'
  rm -f "$croot/home/alice/refresh"
  sed 's/^/note  locked: /' "$croot/home/alice/import.out" "$croot/home/alice/status.out" "$croot/home/alice/locked.log"
  check "status while locked: the keyring is locked, in one voice" \
    bash -c "grep -q 'locked' '$croot/home/alice/status.out' && ! grep -qi 'available' '$croot/home/alice/status.out'"
  check "the log never says 'usable again' while locked" bash -c "! grep -q 'usable again' '$croot/home/alice/locked.log'"
  check "the fix it suggests covers a machine without a user manager" bash -c "grep -q 'dbus-run-session' '$croot/home/alice/locked.log'"

  # --- 7. apt-get purge says what stays (the root shares the host's /proc: its tokends show too) ---
  as_user sh -c 'tokend 2>/dev/null &'
  poll 30 test -S "$croot/home/alice/run/tokend/tokend.sock"
  out=$(in_root apt-get purge -y tokend 2>&1)
  sed -n 's/^\(tokend: .*\)/note  purge: \1/p' <<<"$out"
  # apt's output is an argument, not spliced into the script: it holds quotes ("Use 'apt
  # autoremove'" once tpm2-tss came in as a recommendation and is left behind).
  check "apt-get purge names alice's running tokend and the command" \
    bash -c 'grep -Eq "now:[^)]* alice[ )]" <<<"$1" && grep -q "disable --now tokend.socket" <<<"$1"' _ "$out"
  echo "note  clean-root path: $((SECONDS - started)) s (root cached: $cached)"
  clean_root_leave "$croot"
  # The fake Firebase of the completions' checks: a job of this shell, outside the root. Left
  # running it outlived test-package (and kept a caller's flock held).
  kill $(jobs -p) 2>/dev/null
  wait 2>/dev/null
  trap 'rm -rf "$scratch"' EXIT
}
