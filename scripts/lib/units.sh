# The systemd user units, for every way of installing tokend (scripts/install, the Debian package
# of scripts/package, the release tarball's install.sh, which ships this file): the units in
# systemd/ are the one source, written for scripts/install's layout, and each installer rewrites
# their two install-dependent paths, so that no copy of a unit can drift from systemd/.
# Plain POSIX sh: the tarball's install.sh sources it on machines without bash.

TOKEND_UNITS="tokend.socket tokend.service tokend-keyring.service"

# render_tokend_units SOURCE_DIR BIN_DIR DOC_DIR OUT_DIR: the units of SOURCE_DIR with
# %h/.local/bin (where the binaries are) and %h/.local/share/doc/tokend (the Documentation= link)
# replaced by BIN_DIR and DOC_DIR, written to OUT_DIR (made if missing), mode 0644.
render_tokend_units() {
  _units_src=$1 _units_bin=$2 _units_doc=$3 _units_out=$4
  mkdir -p "$_units_out"
  for _unit in $TOKEND_UNITS; do
    sed -e "s|%h/\.local/bin/|$_units_bin/|g" -e "s|%h/\.local/share/doc/tokend/|$_units_doc/|g" \
      "$_units_src/$_unit" >"$_units_out/$_unit.tmp" || return 1
    # A path of scripts/install's layout left in an installed elsewhere unit would be a unit that
    # starts nothing (203/EXEC): a new install-dependent path must be added above.
    if [ "$_units_bin" != "%h/.local/bin" ] && grep -q '%h/\.local' "$_units_out/$_unit.tmp"; then
      echo "render_tokend_units: $_unit still names %h/.local after the rewrite: $(grep '%h/\.local' "$_units_out/$_unit.tmp")" >&2
      rm -f "$_units_out/$_unit.tmp"
      return 1
    fi
    chmod 0644 "$_units_out/$_unit.tmp"
    mv "$_units_out/$_unit.tmp" "$_units_out/$_unit"
  done
}
