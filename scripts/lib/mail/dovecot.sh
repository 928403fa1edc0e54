# Sourced by scripts/test-mail: dovecot on its own configuration in a directory of the test's world.
# The same settings README's "Mail" section shows for a server (the oauth2 passdb), with
# everything else made local: base and state directories, logs, loopback ports, no TLS.
# write_dovecot_conf DIR IMAP_PORT SUBMISSION_PORT RELAY_PORT INTROSPECTION_URL
write_dovecot_conf() {
  local dir=$1 imap=$2 submission=$3 relay=$4 url=$5 mail_user mail_group login_user
  if [ "$(id -u)" -eq 0 ]; then mail_user=nobody mail_group=nogroup login_user=dovenull internal=dovecot
  else mail_user=$(id -un) mail_group=$(id -gn) login_user=$mail_user internal=$mail_user; fi
  mkdir -p "$dir/run" "$dir/state" "$dir/mail"
  chown "$mail_user:$mail_group" "$dir/mail"
  cat >"$dir/dovecot.conf" <<CONF
# scripts/test-mail's dovecot: everything under $dir, loopback only, no TLS.
base_dir = $dir/run
state_dir = $dir/state
instance_name = tokend-test-mail
log_path = $dir/dovecot.log
info_log_path = $dir/dovecot.log
protocols = imap submission
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
hostname = mail.test
default_internal_user = $internal
default_login_user = $login_user
first_valid_uid = $(id -u "$mail_user")
last_valid_uid = 0
auth_mechanisms = xoauth2 oauthbearer
auth_verbose = yes
passdb {
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = $dir/oauth2.conf.ext
}
# oauth2 cannot look users up: every user the token's introspection names exists.
userdb {
  driver = static
  args = uid=$mail_user gid=$mail_group home=$dir/mail/%n allow_all_users=yes
}
mail_location = maildir:~/Maildir
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = $imap
  }
  inet_listener imaps {
    port = 0
  }
}
service submission-login {
  chroot =
  inet_listener submission {
    address = 127.0.0.1
    port = $submission
  }
}
service anvil {
  chroot =
}
submission_relay_host = 127.0.0.1
submission_relay_port = $relay
submission_relay_trusted = yes
CONF
  cat >"$dir/oauth2.conf.ext" <<CONF
introspection_mode = post
introspection_url = $url
username_attribute = username
active_attribute = active
active_value = true
force_introspection = yes
CONF
  chmod 0600 "$dir/oauth2.conf.ext"
}
