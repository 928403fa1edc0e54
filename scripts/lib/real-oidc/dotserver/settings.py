"""A django-oauth-toolkit authorization server configured as its operators would run it.

Everything that changes per run comes from the environment (scripts/test-real-oidc sets it):
  REAL_OIDC_STATE   a private directory: sqlite database, RS256 key, Django secret key
  REAL_OIDC_ISSUER  http://127.0.0.1:PORT/o (what discovery, ID tokens and tokend agree on)
"""
import os
from pathlib import Path

STATE = Path(os.environ["REAL_OIDC_STATE"])
ISSUER = os.environ["REAL_OIDC_ISSUER"]
ORIGIN = ISSUER.rsplit("/o", 1)[0]

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
SECRET_KEY = (STATE / "django-secret-key").read_text().strip()
ROOT_URLCONF = "dotserver.urls"
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [Path(__file__).resolve().parent.parent / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": STATE / "db.sqlite3",
                         "OPTIONS": {"timeout": 20}}}
STATIC_URL = "static/"
LOGIN_URL = "/accounts/login/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

OAUTH2_PROVIDER = {
    # OpenID Connect with an RS256 signing key (published at /o/.well-known/jwks.json).
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": (STATE / "oidc.key").read_text(),
    "OIDC_ISS_ENDPOINT": ISSUER,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name",
        "email": "Your email address",
        "read": "Read your data",
        "write": "Change your data",
    },
    "DEFAULT_SCOPES": ["openid"],
    # PKCE for every authorization code, S256 only (RFC 7636, RFC 9700 §2.1.1).
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    # Refresh token rotation; the old token is revoked at once (no grace period). Reuse
    # protection stays off: the suite replays a superseded token on purpose to prove it dead,
    # which with protection on would also revoke the live session.
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    # scripts/test-mail asks for short lives (REAL_OIDC_TOKEN_SECONDS) to cross refreshes.
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("REAL_OIDC_TOKEN_SECONDS", "3600")),
    "ID_TOKEN_EXPIRE_SECONDS": int(os.environ.get("REAL_OIDC_TOKEN_SECONDS", "3600")),
    # RFC 8628 device grant: where users enter the code; poll every second (a short test).
    "OAUTH_DEVICE_VERIFICATION_URI": ORIGIN + "/o/device/",
    "DEVICE_FLOW_INTERVAL": 1,
    # The consent page is shown on every authorization (DOT's default, said out loud).
    "REQUEST_APPROVAL_PROMPT": "force",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "oauth2_provider": {"handlers": ["stderr"], "level": "DEBUG"},
        "oauthlib": {"handlers": ["stderr"], "level": "DEBUG"},
    },
}
