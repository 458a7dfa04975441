"""Shared fixtures. Tests never reach a model hub."""

import os

import pytest

from tests.helpers.installed import register_agents_missing_from_the_install

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

register_agents_missing_from_the_install()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny randomly initialised causal LM + tokenizer built offline (nothing from a hub)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.helpers.tiny_lm import build_tiny_llama

    return str(build_tiny_llama(tmp_path_factory.mktemp("tiny-lm"), heads=2, kv_heads=2))
