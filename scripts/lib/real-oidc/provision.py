#!/usr/bin/env python3
"""Provisions the suite's django-oauth-toolkit server in $REAL_OIDC_STATE (a private directory):

  provision.py init            keys, database, the user, the clients (what an operator does once)
  provision.py redirects URI…  replaces the native client's registered redirect URIs
  provision.py session SCOPE…  a session for alice at tokend-native, as a sign-in would leave it:
                               prints its refresh token (for `tokenctl import`, through a pipe)
  provision.py revoke          deletes every grant alice gave tokend-native (an admin's revocation)

The clients, as an operator registers them for a command-line program:
  tokend-native   public, authorization code (+PKCE), RS256 ID tokens, loopback redirect
  tokend-device   public, device code (RFC 8628), RS256 ID tokens
  resource-api    confidential, client credentials: a resource server that introspects tokens
Secrets (the user's password, the resource server's client secret) go to 0600 files in the
state directory, never to argv.
"""
import os
import secrets
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ["REAL_OIDC_STATE"])
USER = "alice"


def write_secret(name, text):
    path = STATE / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def make_keys():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    if not (STATE / "oidc.key").exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write_secret("oidc.key", key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    if not (STATE / "django-secret-key").exists():
        write_secret("django-secret-key", secrets.token_urlsafe(50))


def django_setup():
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dotserver.settings")
    import django

    django.setup()


def init():
    make_keys()
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0, interactive=False)
    password = secrets.token_urlsafe(18)
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=USER, defaults={"email": "alice@example.com"})
    user.set_password(password)
    user.save()
    write_secret("user-password", password)

    Application = get_application_model()
    Application.objects.update_or_create(client_id="tokend-native", defaults=dict(
        name="tokend (native)", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1", algorithm=Application.RS256_ALGORITHM,
        client_secret="", skip_authorization=False, user=user))
    Application.objects.update_or_create(client_id="tokend-device", defaults=dict(
        name="tokend (device)", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_DEVICE_CODE,
        redirect_uris="", algorithm=Application.RS256_ALGORITHM,
        client_secret="", skip_authorization=False, user=user))
    api_secret = secrets.token_urlsafe(32)
    Application.objects.update_or_create(client_id="resource-api", defaults=dict(
        name="the API", client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        redirect_uris="", algorithm=Application.NO_ALGORITHM,
        client_secret=api_secret, hash_client_secret=True, user=user))
    write_secret("resource-api-secret", api_secret)


def redirects(uris):
    django_setup()
    from oauth2_provider.models import get_application_model

    app = get_application_model().objects.get(client_id="tokend-native")
    app.redirect_uris = " ".join(uris)
    app.save()


def session(scopes):
    django_setup()
    from datetime import timedelta
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

    app = get_application_model().objects.get(client_id="tokend-native")
    user = get_user_model().objects.get(username=USER)
    lifetime = settings.OAUTH2_PROVIDER["ACCESS_TOKEN_EXPIRE_SECONDS"]
    access = get_access_token_model().objects.create(
        user=user, application=app, token=secrets.token_urlsafe(30),
        expires=timezone.now() + timedelta(seconds=lifetime), scope=" ".join(scopes))
    refresh = get_refresh_token_model().objects.create(
        user=user, application=app, token=secrets.token_urlsafe(30), access_token=access)
    sys.stdout.write(refresh.token + "\n")


def revoke():
    django_setup()
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    for model in (get_refresh_token_model(), get_access_token_model()):
        model.objects.filter(user__username=USER, application__client_id="tokend-native").delete()


if __name__ == "__main__":
    if sys.argv[1:2] == ["init"]:
        init()
    elif sys.argv[1:2] == ["redirects"]:
        redirects(sys.argv[2:])
    elif sys.argv[1:2] == ["session"]:
        session(sys.argv[2:])
    elif sys.argv[1:2] == ["revoke"]:
        revoke()
    else:
        sys.exit(__doc__)
