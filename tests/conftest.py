"""Shared fixtures. Tests never reach a model hub."""

import os

from tests.helpers.installed import register_agents_missing_from_the_install

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

register_agents_missing_from_the_install()
