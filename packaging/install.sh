#!/bin/sh
# Installs tokend from this release tarball, for machines without dpkg (elsewhere the Debian
# package is simpler). It starts and enables nothing; it prints the one command that does.
#   ./install.sh                         # under ~/.local (binaries in ~/.local/bin)
#   ./install.sh --prefix DIR            # under DIR, e.g. sudo ./install.sh --prefix /usr/local
#   ./install.sh --uninstall [--prefix DIR]
#                                        # stops and disables the units it installed, removes
#                                        # them; the keyring items, configuration and token files stay
# It first checks that the libraries the binaries need are installed (libsecret, GLib) and, if
# not, installs nothing and prints the one apt-get or dnf command that adds them.
# Layout under the prefix: bin/, share/systemd/user/ (a user unit directory systemd searches for
# ~/.local and /usr/local), share/man/man1/, share/{bash-completion,zsh,fish}/, share/doc/tokend/.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix="$HOME/.local"
mode=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift ;;
    --uninstall) mode=uninstall ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (try --help)" >&2; exit 64 ;;
  esac
  shift
done
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
. "$here/units.sh"
. "$here/install-checks.sh"

bin="$prefix/bin"
share="$prefix/share"
units="$share/systemd/user"
doc="$share/doc/tokend"
man="$share/man/man1"
bash_completion="$share/bash-completion/completions/tokenctl"
zsh_completion="$share/zsh/site-functions/_tokenctl"
fish_completion="$share/fish/vendor_completions.d/tokenctl.fish"

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

mkdir -p "$bin" "$man" "$doc" "$(dirname "$bash_completion")" "$(dirname "$zsh_completion")" \
  "$(dirname "$fish_completion")"
# cp to a new name, then mv: a running tokend keeps its old binary until restarted.
for binary in tokend tokenctl docker-credential-tokend; do
  cp "$here/bin/$binary" "$bin/.$binary.new" && chmod 0755 "$bin/.$binary.new" && mv -f "$bin/.$binary.new" "$bin/$binary"
done
render_tokend_units "$here/systemd" "$bin" "$doc" "$units"
for file in "$here"/man/man1/*; do cp "$file" "$man/" && chmod 0644 "$man/$(basename "$file")"; done
cp "$here/completions/tokenctl.bash" "$bash_completion"
cp "$here/completions/_tokenctl" "$zsh_completion"
cp "$here/completions/tokenctl.fish" "$fish_completion"
cp "$here"/doc/* "$doc/"
chmod 0644 "$bash_completion" "$zsh_completion" "$fish_completion" "$doc"/*
echo "installed tokend, tokenctl and docker-credential-tokend in $bin, the user units in $units"
echo "to run it: systemctl --user daemon-reload && systemctl --user enable --now tokend.socket"
case ":$PATH:" in *":$bin:"*) ;; *) echo "note: $bin is not on your PATH" ;; esac
say_completion_setup "$bash_completion" "$zsh_completion" "$fish_completion"
