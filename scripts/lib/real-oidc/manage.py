#!/usr/bin/env python3
"""Django's manage.py for the suite's authorization server (scripts/test-real-oidc)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dotserver.settings")
from django.core.management import execute_from_command_line  # noqa: E402

execute_from_command_line(sys.argv)
