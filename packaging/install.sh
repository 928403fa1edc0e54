#!/bin/sh
# Installs tokend from this release tarball, for machines without dpkg (elsewhere the Debian
# package is simpler). It starts and enables nothing; it prints the one command that does.
#   ./install.sh                         # under ~/.local (binaries in ~/.local/bin)
#   ./install.sh --prefix DIR            # under DIR, e.g. sudo ./install.sh --prefix /usr/local
#   ./install.sh --uninstall [--prefix DIR]
#                                        # stops and disables the units it installed, removes
#                                        # them; the keyring items, configuration and token files stay
# It first checks that the libraries the binaries need are installed (libsecret, GLib) and, if
# not, installs nothing and prints the one apt-get or dnf command that adds them; tpm2-tss, which
# only the tpm2 store loads, is only noted.
# Layout under the prefix: bin/, share/systemd/user/ (a user unit directory systemd searches for
# ~/.local and /usr/local), share/man/man1/, share/{bash-completion,zsh,fish}/, share/doc/tokend/.
set -eu
# What it makes is readable by all, whatever the caller's umask; each file's mode is set below.
umask 022
here=$(cd "$(dirname "$0")" && pwd)
prefix="$HOME/.local"
mode=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift ;;
    --uninstall) mode=uninstall ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (try --help)" >&2; exit 64 ;;
  esac
  shift
done
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
. "$here/units.sh"
. "$here/install-checks.sh"

# --- Safety: run as root into a folder others can write, every copy and chmod would follow the
# links they plant there (issue 45). Nothing is written until the prefix is found safe.

# The characters a prefix may have: the units name it (ExecStart=, Documentation=), where systemd
# gives '"', '\', '$' and control characters meanings of their own; '%' is written as '%%'.
refuse_unusable_prefix() {
  case "$1" in
    *[!A-Za-z0-9\ /._+,@%\&:=~-]*)
      echo "install.sh: --prefix may hold letters, digits, spaces and / . _ + , @ % & : = ~ - only; choose another directory" >&2
      exit 64 ;;
  esac
}

# refuse_unsafe_dir DIR: DIR must be a directory (not a link) owned by the caller or root that
# no one else can write to; a root-owned sticky one (/tmp) is fine, its entries being checked in
# turn. Anyone else could swap a file or folder in it for a link between two steps.
refuse_unsafe_dir() {
  if [ -L "$1" ] || [ ! -d "$1" ]; then
    echo "install.sh: $1 is not a directory (a link?): refusing to install through it" >&2
    exit 77
  fi
  # ls -ldn (POSIX, unlike stat -c): the mode's ten characters, whether an ACL follows ("+": it
  # may let others write), the owner's uid.
  set -- "$1" $(ls -ldn -- "$1" | awk '{print substr($1, 1, 10), (substr($1, 11, 1) == "+" ? "acl" : "-"), $3, $4}')
  case "$2" in
    d????????t|d????????T) [ "$4" = 0 ] && [ "$3" = - ] && return 0 ;;
  esac
  # Group-writable is fine for the caller's own private group (as tokend's configuration check).
  case "$2:$3" in
    d????w??-?:-) [ "$5" = "$(private_group)" ] && set -- "$1" "d????-????" "$3" "$4" ;;
  esac
  case "$2:$3" in
    d????w????:*|d???????w?:*|*:acl)
      echo "install.sh: others can write to $1 (mode $2${3#-}): refusing; install as the user who owns it, or into a directory only you and root can write to" >&2
      exit 77 ;;
  esac
  if [ "$4" != 0 ] && [ "$4" != "$(id -u)" ]; then
    echo "install.sh: $1 belongs to user $4, not to you or root: refusing; install as that user (without sudo), or into a directory of yours" >&2
    exit 77
  fi
}

# private_group: the gid of the caller's user-private group (named as the caller, no other
# member, no other user's primary group), or nothing.
private_group() {
  [ "$(id -gn)" = "$(id -un)" ] || return 0
  _members=$(getent group "$(id -g)" | cut -d: -f4)
  [ -z "$_members" ] || [ "$_members" = "$(id -un)" ] || return 0
  [ "$(getent passwd | awk -F: -v gid="$(id -g)" '$4 == gid' | wc -l)" -le 1 ] || return 0
  id -g
}

# check_path_to DIR: every existing directory from / down to DIR, each as refuse_unsafe_dir says.
check_path_to() {
  _path=""
  _rest=${1#/}
  refuse_unsafe_dir /
  while [ -n "$_rest" ]; do
    _part=${_rest%%/*}
    case "$_rest" in */*) _rest=${_rest#*/} ;; *) _rest="" ;; esac
    [ -n "$_part" ] && [ "$_part" != . ] || continue
    _path="$_path/$_part"
    [ -e "$_path" ] || [ -L "$_path" ] || return 0
    refuse_unsafe_dir "$_path"
  done
}

# make_dir DIR: DIR and its missing parents, one at a time below a checked parent, each checked.
make_dir() {
  check_path_to "$1"
  [ -d "$1" ] && return 0
  make_dir "$(dirname "$1")"
  mkdir -m 0755 "$1"
  refuse_unsafe_dir "$1"
}

# install_file SOURCE DEST MODE: a new file of its own beside DEST (mktemp: created exclusively,
# never through a link), given MODE, then renamed over DEST (a link there is replaced, not
# followed; a directory there is an error). A running tokend keeps its old binary until restarted.
install_file() {
  _new=$(mktemp "$(dirname "$2")/.tokend-install.XXXXXX")
  if cat "$1" >"$_new" && chmod "$3" "$_new" && mv -f -T "$_new" "$2"; then return 0; fi
  rm -f "$_new"
  echo "install.sh: cannot install $2; see the error above" >&2
  exit 1
}

refuse_unusable_prefix "$prefix"

bin="$prefix/bin"
share="$prefix/share"
units="$share/systemd/user"
doc="$share/doc/tokend"
man="$share/man/man1"
bash_completion="$share/bash-completion/completions/tokenctl"
zsh_completion="$share/zsh/site-functions/_tokenctl"
fish_completion="$share/fish/vendor_completions.d/tokenctl.fish"
# Installing or uninstalling, every folder it touches that exists already, from / down.
for dir in "$bin" "$units" "$man" "$doc" "$(dirname "$bash_completion")" "$(dirname "$zsh_completion")" \
  "$(dirname "$fish_completion")"; do
  check_path_to "$dir"
done

if [ "$mode" = uninstall ]; then
  stop_installed_units "$units"
  rm -f "$bin/tokend" "$bin/tokenctl" "$bin/docker-credential-tokend" "$man/tokenctl.1" "$man/tokend.1" \
    "$bash_completion" "$zsh_completion" "$fish_completion"
  for unit in $TOKEND_UNITS; do rm -f "$units/$unit"; done
  rm -rf "$doc"
  forget_removed_units
  echo "uninstalled tokend from $prefix; the keyring items and ~/.config/tokend stay"
  say_what_stays
  exit 0
fi

check_libraries "$here/bin" "$here/libraries" || exit 69

for dir in "$bin" "$units" "$man" "$doc" "$(dirname "$bash_completion")" "$(dirname "$zsh_completion")" \
  "$(dirname "$fish_completion")"; do
  make_dir "$dir"
done
for binary in tokend tokenctl docker-credential-tokend; do install_file "$here/bin/$binary" "$bin/$binary" 0755; done
render_tokend_units "$here/systemd" "$bin" "$doc" "$units"
for file in "$here"/man/man1/*; do install_file "$file" "$man/$(basename "$file")" 0644; done
install_file "$here/completions/tokenctl.bash" "$bash_completion" 0644
install_file "$here/completions/_tokenctl" "$zsh_completion" 0644
install_file "$here/completions/tokenctl.fish" "$fish_completion" 0644
for file in "$here"/doc/*; do install_file "$file" "$doc/$(basename "$file")" 0644; done
echo "installed tokend, tokenctl and docker-credential-tokend in $bin, the user units in $units"
echo "to run it: systemctl --user daemon-reload && systemctl --user enable --now tokend.socket"
case ":$PATH:" in *":$bin:"*) ;; *) echo "note: $bin is not on your PATH" ;; esac
say_completion_setup "$bash_completion" "$zsh_completion" "$fish_completion"
