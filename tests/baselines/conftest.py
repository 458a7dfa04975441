"""A tiny randomly initialised causal LM + tokenizer built offline (nothing from a hub)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.helpers.tiny_lm import build_tiny_llama

    return str(build_tiny_llama(tmp_path_factory.mktemp("tiny-lm"), heads=2, kv_heads=2))
