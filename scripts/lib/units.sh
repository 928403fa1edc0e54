# The systemd user units, for every way of installing tokend (scripts/install, the Debian package
# of scripts/package, the release tarball's install.sh, which ships this file): the units in
# systemd/ are the one source, written for scripts/install's layout, and each installer rewrites
# their two install-dependent paths, so that no copy of a unit can drift from systemd/.
# Plain POSIX sh: the tarball's install.sh sources it on machines without bash.

TOKEND_UNITS="tokend.socket tokend.service tokend-keyring.service"

# render_tokend_units SOURCE_DIR BIN_DIR DOC_DIR OUT_DIR: the units of SOURCE_DIR with
# %h/.local/bin (where the binaries are) and %h/.local/share/doc/tokend (the Documentation= link)
# replaced by BIN_DIR and DOC_DIR, written to OUT_DIR (made if missing), mode 0644. A directory
# given as an absolute path is written as systemd reads it: '%' as '%%' (a specifier otherwise),
# an ExecStart= path with a space quoted, the link's space and '%' percent-encoded; one starting
# with %h is scripts/install's, in the units' own syntax. Each unit is written to a new file of
# its own (mktemp), then renamed into place: nothing is written through a link found in OUT_DIR.
render_tokend_units() {
  _units_src=$1 _units_out=$4
  case "$2" in
    /*) _units_bin=$(_units_sed_escape "$(printf '%s\n' "$2" | sed 's/%/%%/g')") ;;
    *) _units_bin=$(_units_sed_escape "$2") ;;
  esac
  case "$3" in
    /*) _units_doc=$(_units_sed_escape "$(printf '%s\n' "$3" | sed -e 's/%/%%25/g' -e 's/ /%%20/g')") ;;
    *) _units_doc=$(_units_sed_escape "$3") ;;
  esac
  # Quoted only when it must be: the packaged units keep the plain ExecStart=/usr/bin/tokend.
  case "$2" in *" "*) _units_quote='"' ;; *) _units_quote="" ;; esac
  mkdir -p "$_units_out"
  for _unit in $TOKEND_UNITS; do
    _units_new=$(mktemp "$_units_out/.$_unit.XXXXXX") || return 1
    if ! sed -e "s|^\(Exec[A-Za-z]*=\)%h/\.local/bin/\([^ ]*\)|\1$_units_quote$_units_bin/\2$_units_quote|" \
      -e "s|%h/\.local/share/doc/tokend/|$_units_doc/|g" "$_units_src/$_unit" >"$_units_new"; then
      rm -f "$_units_new"
      return 1
    fi
    # A path of scripts/install's layout left in an installed elsewhere unit would be a unit that
    # starts nothing (203/EXEC): a new install-dependent path must be added above.
    # ~/.local/state/tokend (the tpm2 store's and the moves' record) is the user's own, however
    # tokend was installed: it stays.
    if [ "$2" != "%h/.local/bin" ] && grep -v '%h/\.local/state/tokend' "$_units_new" | grep -q '%h/\.local'; then
      echo "render_tokend_units: $_unit still names %h/.local after the rewrite: $(grep -v '%h/\.local/state/tokend' "$_units_new" | grep '%h/\.local')" >&2
      rm -f "$_units_new"
      return 1
    fi
    chmod 0644 "$_units_new"
    mv -f -T "$_units_new" "$_units_out/$_unit"
  done
}

# _units_sed_escape TEXT: TEXT as the replacement of an s|…|…| command (its '\', '|' and '&').
_units_sed_escape() {
  printf '%s\n' "$1" | sed 's/[\\|&]/\\&/g'
}
