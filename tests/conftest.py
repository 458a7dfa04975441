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


@pytest.fixture(autouse=True)
def _one_worker_unless_asked(monkeypatch):
    """``harness run`` defaults to ``--workers auto`` (the idle cores); here a run has one process unless the test
    passes ``--workers``, so no test depends on how busy the machine running the suite is, and agents and envs a
    test registers in-process (which spawned workers never see) keep working."""
    import harness.cli

    monkeypatch.setattr(harness.cli, "DEFAULT_WORKERS", 1)
