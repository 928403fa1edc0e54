# The release tarball's install.sh, what it checks and says around the copying (issue 46): the
# libraries the binaries need, the units it stops on --uninstall, where each shell finds the
# completions. Plain POSIX sh, sourced by install.sh; the tarball ships it beside install.sh.

# check_libraries BIN_DIR LIBRARIES: 0 if every library the binaries of BIN_DIR are linked
# against is installed; else prints the missing ones and the one command that installs them, and
# returns 1. LIBRARIES (written by scripts/package) maps each soname the binaries name (NEEDED) to
# the Debian package dpkg-shlibdeps took it from; dnf installs by soname, so Fedora needs no map.
check_libraries() {
  _lib_bins=$1 _lib_map=$2
  if ! command -v ldd >/dev/null 2>&1; then
    echo "note: no ldd here, so the libraries tokend needs were not checked (the Debian names: $(awk '{print $2}' "$_lib_map" | sort -u | tr '\n' ' '))"
    return 0
  fi
  # ldd prints "libsecret-1.so.0 => not found" for each library it cannot find, and fails
  # ("not a dynamic executable") for the static tokenctl, which needs none: that is no failure
  # (install.sh runs under set -e).
  _lib_missing=$(for _lib_bin in "$_lib_bins"/*; do LC_ALL=C ldd "$_lib_bin" 2>/dev/null || true; done \
    | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
  [ -n "$_lib_missing" ] || return 0
  # Only the binaries' own NEEDED libraries have a package in the map; one missing only because
  # its parent is (libgio beside libsecret) comes with the parent's package.
  _lib_debian=$(for _lib_so in $_lib_missing; do awk -v so="$_lib_so" '$1 == so {print $2}' "$_lib_map"; done | sort -u | tr '\n' ' ')
  _lib_fedora=$(for _lib_so in $_lib_missing; do grep -q "^$_lib_so " "$_lib_map" && printf "'%s()(64bit)' " "$_lib_so"; done)
  _lib_sudo=""
  [ "$(id -u)" -eq 0 ] || _lib_sudo="sudo "
  echo "install.sh: tokend needs libraries this system lacks ($(echo $_lib_missing)); nothing was installed." >&2
  if command -v apt-get >/dev/null 2>&1 || [ -z "$_lib_fedora" ]; then
    echo "install them, then run install.sh again: ${_lib_sudo}apt-get install ${_lib_debian% }" >&2
  elif command -v dnf >/dev/null 2>&1; then
    echo "install them, then run install.sh again: ${_lib_sudo}dnf install ${_lib_fedora% }" >&2
  else
    echo "install them (Debian: apt-get install ${_lib_debian% }; Fedora: dnf install ${_lib_fedora% }), then run install.sh again" >&2
  fi
  return 1
}

# stop_installed_units UNIT_DIR: before --uninstall removes the units of UNIT_DIR, stops and
# disables them in the user manager of whoever runs it, if that manager loaded them from there
# (a unit of the same name from elsewhere, e.g. the Debian package's, is not ours to stop).
stop_installed_units() {
  _stop_dir=$1 _stop_units=""
  command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1 || return 0
  for _stop_unit in $TOKEND_UNITS; do
    [ "$(systemctl --user show -P FragmentPath "$_stop_unit" 2>/dev/null)" = "$_stop_dir/$_stop_unit" ] \
      && _stop_units="$_stop_units $_stop_unit"
  done
  [ -n "$_stop_units" ] || return 0
  # disable --now: the enable links go (they would point at removed files) and a running tokend stops.
  systemctl --user disable --now $_stop_units >/dev/null 2>&1 || true
  echo "stopped and disabled$_stop_units"
  _stop_reload=yes
}

# forget_removed_units: after --uninstall removed the units stop_installed_units stopped, the
# user manager forgets them too (else `systemctl --user status tokend` still shows them).
forget_removed_units() {
  [ -n "${_stop_reload:-}" ] || return 0
  systemctl --user daemon-reload >/dev/null 2>&1 || true
}

# say_what_stays: what --uninstall cannot undo for other users (the units it removed may be
# enabled, or running, in their user managers), so that nobody is left with a dangling link or a
# daemon running a deleted binary without being told.
say_what_stays() {
  echo "other users who enabled tokend keep their enable links (now dangling) and a running tokend until each runs:"
  echo "  systemctl --user disable --now tokend.socket tokend.service tokend-keyring.service"
}

# say_completion_setup BASH ZSH FISH: for each installed shell whose default search path (as
# Debian sets it up) does not reach the completion just installed, the one line that makes it.
say_completion_setup() {
  _cmp_zsh_dir=$(dirname "$2")
  # zsh -f: the default fpath, before any rc file; compinit (zsh-newuser-install's
  # recommended ~/.zshrc) reads only that.
  if command -v zsh >/dev/null 2>&1 && ! zsh -fc 'print -l $fpath' | grep -qx "$_cmp_zsh_dir"; then
    echo "zsh: for tokenctl's completion add this line to ~/.zshrc, before compinit: fpath+=($_cmp_zsh_dir)"
  fi
  _cmp_fish_dir=$(dirname "$3")
  if command -v fish >/dev/null 2>&1 && ! fish -c 'string join \n -- $fish_complete_path' | grep -qx "$_cmp_fish_dir"; then
    echo "fish: for tokenctl's completion add to ~/.config/fish/config.fish: set -p fish_complete_path $_cmp_fish_dir"
  fi
  # bash-completion (not in a minimal install) reads ~/.local/share and $XDG_DATA_DIRS.
  if command -v bash >/dev/null 2>&1 && [ ! -r /usr/share/bash-completion/bash_completion ]; then
    echo "bash: tokenctl's completion needs the bash-completion package (apt-get install bash-completion)"
  fi
}
