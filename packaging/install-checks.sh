# The release tarball's install.sh, what it checks and says around the copying (issue 46): the
# libraries the binaries need, the units it stops on --uninstall, where each shell finds the
# completions. Plain POSIX sh, sourced by install.sh; the tarball ships it beside install.sh.

# check_libraries BIN_DIR LIBRARIES: 0 if every library the binaries of BIN_DIR are linked
# against is installed; else prints the missing ones and the one command that installs them, and
# returns 1. LIBRARIES (written by scripts/package) maps each soname the binaries name (NEEDED) to
# the Debian package dpkg-shlibdeps took it from; dnf installs by soname, so Fedora needs no map.
# A line with a third field, the store that loads it when first used (tpm2-tss: "tpm2"), is
# optional: missing, it is only noted with its command, and the install goes on.
check_libraries() {
  _lib_bins=$1 _lib_map=$2
  note_optional_libraries "$_lib_map"
  if ! command -v ldd >/dev/null 2>&1; then
    echo "note: no ldd here, so the libraries tokend needs were not checked (the Debian names: $(awk 'NF == 2 {print $2}' "$_lib_map" | sort -u | tr '\n' ' '))"
    return 0
  fi
  # ldd prints "libsecret-1.so.0 => not found" for each library it cannot find, and fails
  # ("not a dynamic executable") for the static tokenctl, which needs none: that is no failure
  # (install.sh runs under set -e).
  _lib_missing=$(for _lib_bin in "$_lib_bins"/*; do LC_ALL=C ldd "$_lib_bin" 2>/dev/null || true; done \
    | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
  [ -n "$_lib_missing" ] || return 0
  echo "install.sh: tokend needs libraries this system lacks ($(echo $_lib_missing)); nothing was installed." >&2
  echo "install them, then run install.sh again: $(library_command "$_lib_map" $_lib_missing)" >&2
  return 1
}

# note_optional_libraries LIBRARIES: for each store whose libraries (LIBRARIES' third field) are
# not all installed, one line saying which and the command that installs them. Without ldconfig
# (not in every user's PATH: /sbin) nothing is said; the store names them when first used.
note_optional_libraries() {
  _opt_ldconfig=$(command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)
  [ -x "$_opt_ldconfig" ] || return 0
  _opt_known=$("$_opt_ldconfig" -p 2>/dev/null | awk '{print $1}')
  for _opt_store in $(awk 'NF == 3 {print $3}' "$1" | sort -u); do
    _opt_missing=$(for _opt_so in $(awk -v store="$_opt_store" '$3 == store {print $1}' "$1"); do
      echo "$_opt_known" | grep -qxF "$_opt_so" || echo "$_opt_so"; done)
    [ -n "$_opt_missing" ] || continue
    echo "note: the $_opt_store store needs libraries this system lacks ($(echo $_opt_missing)); the other stores do not. To use it: $(library_command "$1" $_opt_missing)"
  done
}

# library_command LIBRARIES SONAME...: the one command that installs these libraries here: apt-get
# with the Debian packages of LIBRARIES, or dnf by soname.
library_command() {
  _cmd_map=$1 _cmd_sudo=""; shift
  [ "$(id -u)" -eq 0 ] || _cmd_sudo="sudo "
  # Only the binaries' own NEEDED libraries have a package in the map; one missing only because
  # its parent is (libgio beside libsecret) comes with the parent's package.
  _cmd_debian=$(for _cmd_so in "$@"; do awk -v so="$_cmd_so" '$1 == so {print $2}' "$_cmd_map"; done | sort -u | tr '\n' ' ')
  _cmd_fedora=$(for _cmd_so in "$@"; do grep -q "^$_cmd_so " "$_cmd_map" && printf "'%s()(64bit)' " "$_cmd_so"; done)
  if command -v apt-get >/dev/null 2>&1 || [ -z "$_cmd_fedora" ]; then
    echo "${_cmd_sudo}apt-get install ${_cmd_debian% }"
  elif command -v dnf >/dev/null 2>&1; then
    echo "${_cmd_sudo}dnf install ${_cmd_fedora% }"
  else
    echo "(Debian) apt-get install ${_cmd_debian% }; (Fedora) dnf install ${_cmd_fedora% }"
  fi
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
