"""Mistakes a stat or a metadata read can find are answered before torch and transformers are imported.

Each command runs in a fresh interpreter, which then reports whether torch or transformers were imported: on a
busy machine or a cold disk cache those imports take tens of seconds, so not importing them is what makes the
answer fast (no timing here: see the module docstring of harness.device).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.device import TorchBuild, check_device, torch_build
from tests.helpers.paths import ROOT, TINY_MODEL

_PROBE = """
import contextlib, io, json, sys
from harness.cli import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "stderr": err.getvalue(), "heavy": sorted({"torch", "transformers"} & set(sys.modules))}))
"""


def _answer(tmp_path: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    env.pop("HF_HUB_CACHE", None)  # the empty HF_HOME above is the cache
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _one_line(answer: dict) -> str:
    lines = answer["stderr"].splitlines()
    assert answer["status"] == 2 and len(lines) == 1 and lines[0].startswith("harness: error: "), answer
    return lines[0]


def test_a_missing_hf_path_is_answered_without_importing_torch(tmp_path):
    answer = _answer(tmp_path, "run", f"hf:{tmp_path}/nope", "--env", "ragen/Bandit-v0", "--out", str(tmp_path))
    assert f"hf:{tmp_path}/nope: no such directory" in _one_line(answer)
    assert answer["heavy"] == []
    answer = _answer(tmp_path, "train", "cpu-tiny", "--model", f"{tmp_path}/nope", "--out-dir", str(tmp_path / "t"))
    assert f"--model {tmp_path}/nope: no such directory" in _one_line(answer)
    assert answer["heavy"] == []


def test_a_hub_name_missing_from_the_offline_cache_is_named(tmp_path):
    pytest.importorskip("huggingface_hub")
    answer = _answer(tmp_path, "run", "hf:some-org/never-cached", "--env", "ragen/Bandit-v0", "--out", str(tmp_path))
    line = _one_line(answer)
    assert "hf:some-org/never-cached: not in the local cache: download it" in line
    assert "or pass hf:/path/to/dir" in line
    assert answer["heavy"] == []


@pytest.mark.skipif((torch_build() or TorchBuild("", "cuda")).has_gpu_support, reason="needs a CPU build of torch")
def test_device_cuda_on_a_cpu_torch_is_answered_without_importing_it(tmp_path):
    answer = _answer(tmp_path, "run", "tiny", "--device", "cuda", "--env", "ragen/Bandit-v0", "--out", str(tmp_path))
    line = _one_line(answer)
    assert "--device cuda: CUDA is not available" in line and "built without CUDA" in line and "--device cpu" in line
    assert answer["heavy"] == []
    tiny = str(TINY_MODEL)
    answer = _answer(tmp_path, "train", "cpu-tiny", "--model", tiny, "--device", "cuda", "--out-dir", str(tmp_path))
    assert "--device cuda: CUDA is not available" in _one_line(answer)
    assert answer["heavy"] == []


_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = {hip}
"""


@pytest.mark.parametrize(
    ("version", "cuda", "hip", "described", "gpu"),
    [
        ("2.13.0+cpu", "None", "None", "torch 2.13.0+cpu (CPU build)", False),
        ("2.13.0", "'13.0'", "None", "torch 2.13.0 (CUDA 13.0 build)", True),
        ("2.13.0+rocm7.1", "None", "'7.1.25'", "torch 2.13.0+rocm7.1 (ROCm 7.1.25 build)", True),
    ],
)
def test_torch_build_reads_version_py(tmp_path, version, cuda, hip, described, gpu):
    path = tmp_path / "version.py"
    path.write_text(_VERSION_PY.format(version=version, cuda=cuda, hip=hip))
    build = torch_build(path)
    assert str(build) == described and build.has_gpu_support is gpu


def test_torch_build_is_none_when_it_cannot_tell(tmp_path):
    assert torch_build(tmp_path / "missing.py") is None
    (tmp_path / "odd.py").write_text("version = compute()\n")
    assert torch_build(tmp_path / "odd.py") is None


def test_check_device_leaves_cpu_and_auto_alone():
    check_device("cpu")
    check_device("auto")


def test_trl_example_help_does_not_import_torch():
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['trl_grpo.py', '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(ROOT / 'examples' / 'trl_grpo.py')!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted({'torch', 'transformers', 'trl'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--steps" in done.stdout and done.stdout.splitlines()[-1] == "[]"
