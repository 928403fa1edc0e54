# Shared by scripts/test, scripts/demo and scripts/install: installs the Debian packages a step
# needs, only when one is missing, so every script is idempotent and cheap on a second run.

# Packages to build (libsecret and GLib headers; tpm2-tss's ESYS, TCTI loader and marshalling
# for the tpm2 store).
BUILD_PACKAGES=(libsecret-1-dev libglib2.0-dev pkg-config libtss2-dev)
# What scripts/lib/private-session needs: a session bus, a real gnome-keyring, secret-tool, gdbus
# (libglib2.0-bin) to lock the keyring and python3-dbus to unlock it in place (keyring-unlock).
SESSION_PACKAGES=(dbus gnome-keyring libsecret-tools libglib2.0-bin python3-dbus)
# Packages to run tests and the demo: a private session, socat for protocol checks, faketime for
# clock jumps. scripts/test-systemd adds a user manager (systemd), nsenter and runuser
# (util-linux), gdb for the ptrace check, curl and python3 for the fake's control plane. git is
# the other tool of the integration tests; man-db and groff-base render tokenctl's man page.
# The other stores' real pieces (StoreTests): a TPM 2.0 simulator and its tools, pass and gnupg;
# python3-cryptography opens the tpm2 store's sessions for scripts/chaos --store tpm2.
STORE_PACKAGES=(swtpm swtpm-tools tpm2-tools pass gnupg python3-cryptography)
RUNTIME_PACKAGES=("${SESSION_PACKAGES[@]}" socat faketime procps systemd util-linux gdb curl python3 git man-db groff-base "${STORE_PACKAGES[@]}")

ensure_packages() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Rootless podman for scripts/test-consumers' container check: podman, newuidmap and newgidmap
# (uidmap) for the user namespace, and runc, which runs where crun refuses a machine with
# cgroup v1 and v2 hierarchies mounted together ("cgroups in hybrid mode not supported").
PODMAN_PACKAGES=(podman uidmap runc)
ensure_build_deps() { ensure_packages "${BUILD_PACKAGES[@]}"; }
ensure_runtime_deps() { ensure_packages "${RUNTIME_PACKAGES[@]}"; }
ensure_podman() { ensure_packages "${PODMAN_PACKAGES[@]}"; }

# oidc-provider-mock, a real OpenID provider for the OIDC end-to-end tests, in a git-ignored
# venv beside the repository (pinned: its quirks are what the tests rely on).
# A real browser drives one login: Debian's chromium and its chromedriver, selenium in the venv.
OIDC_MOCK_VERSION=0.3.4
SELENIUM_VERSION=4.51.0
ensure_oidc_mock() {
  local venv=.venv-oidc
  ensure_packages chromium chromium-driver
  if [ -x "$venv/bin/oidc-provider-mock" ] && "$venv/bin/pip" show oidc-provider-mock 2>/dev/null | grep -qx "Version: $OIDC_MOCK_VERSION" \
    && "$venv/bin/pip" show selenium 2>/dev/null | grep -qx "Version: $SELENIUM_VERSION"; then
    return 0
  fi
  ensure_packages python3-venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "oidc-provider-mock==$OIDC_MOCK_VERSION" "selenium==$SELENIUM_VERSION"
}

# The real clients of tokend's integrations (issue 21), each run by a test as its users run it:
# google-auth for Google external accounts, boto3 for AWS web identity (own git-ignored venv,
# main packages pinned), and skopeo from Debian for the container registry credential helper.
CLOUD_CLIENT_PINS=("google-auth==2.63.0" "requests==2.34.2" "urllib3==2.8.0" "boto3==1.44.8" "botocore==1.44.8")
ensure_cloud_clients() {
  ensure_packages skopeo
  ensure_pinned_venv .venv-clients "${CLOUD_CLIENT_PINS[@]}"
}

# A git-ignored venv holding exactly the pins given, made again when they change. The pins are
# written last, so an interrupted install is redone on the next run.
ensure_pinned_venv() {
  local venv=$1
  shift
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.pins" 2>/dev/null)" = "$*" ]; then
    return 0
  fi
  ensure_packages python3-venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "$@"
  printf '%s' "$*" >"$venv/.pins"
}

# django-oauth-toolkit, a production OAuth 2.0 / OpenID Connect server, for scripts/test-real-oidc,
# in its own git-ignored venv beside the repository, every version pinned: DOT 3.x answers 500 at
# its device endpoints with oauthlib 4, so oauthlib stays on 3.3. selenium drives Debian's
# chromium through Debian's chromedriver, as in ensure_oidc_mock.
REAL_OIDC_PINS=("django-oauth-toolkit==3.4.1" "oauthlib==3.3.1" "Django==5.2.19" "jwcrypto==1.6.1"
  "requests==2.32.5" "selenium==$SELENIUM_VERSION")
ensure_real_oidc() {
  ensure_packages chromium chromium-driver
  ensure_pinned_venv .venv-real-oidc "${REAL_OIDC_PINS[@]}"
}

# The mail pieces of scripts/test-mail (README, "Mail"): dovecot (IMAP, submission, LDA) with its
# oauth2 passdb, msmtp, mbsync (isync) with Debian's XOAUTH2 SASL plugin, neomutt, curl's IMAP; the
# authorization server is django-oauth-toolkit, in scripts/test-real-oidc's venv (no browser).
MAIL_PACKAGES=(dovecot-core dovecot-imapd dovecot-submissiond msmtp isync libsasl2-modules-kdexoauth2 neomutt curl)
ensure_mail_clients() {
  ensure_packages "${MAIL_PACKAGES[@]}"
  ensure_pinned_venv .venv-real-oidc "${REAL_OIDC_PINS[@]}"
}

# The Secret Services besides gnome-keyring, for scripts/test-secret-services (issue 31):
# KeePassXC (FdoSecrets) and KDE's kwalletd5 (libkf5wallet-bin; its Secret Service API needs
# QCA's plugins), both headless through Qt's offscreen platform.
ensure_secret_services() {
  ensure_packages "${SESSION_PACKAGES[@]}" curl python3 keepassxc libkf5wallet-bin libqca-qt5-2-plugins
}

# A real etcd cluster for scripts/test-fleet (issue 50): Debian's etcd 3.4 server and etcdctl,
# openssl for the cluster's CA and certificates.
ensure_etcd() {
  ensure_packages etcd-server etcd-client openssl python3 curl
}
