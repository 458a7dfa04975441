"""scripts/install.sh: the system packages (the plain install gets the code sandbox, bubblewrap, too) and the
torch build it installs (scripts/torch_build.py decides; its decision is tested in test_torch_build.py).

The script runs for real from a copy of the repo layout; only the system tools it calls (apt-get, dpkg, sudo)
and the virtual environment's python are recorders, so nothing is installed and pip is not run. The CPU wheel
index is a local address ($RAGEN_TORCH_CPU_INDEX), so no test reaches the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "install.sh"


def _recorder(path: Path, log: Path, status: int = 0) -> None:
    path.write_text(f'#!/bin/bash\necho "$(basename "$0") $*" >> {log}\nexit {status}\n')
    path.chmod(0o755)


def _install(
    tmp_path: Path, *args: str, apt: bool = True, cpu_index: str = "http://127.0.0.1:9/"
) -> tuple[int, list[str], str]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "install.sh")
    shutil.copy(SCRIPT.parent / "torch_build.py", tmp_path / "scripts" / "torch_build.py")
    log = tmp_path / "calls.log"
    log.touch()
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    _recorder(venv_bin / "python", log)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("dirname", "id", "basename", "env"):
        os.symlink(shutil.which(name), tools / name)
    os.symlink(sys.executable, tools / "python3")  # runs scripts/torch_build.py (the standard library only)
    _recorder(tools / "dpkg", log, status=1)  # nothing is installed yet
    if apt:
        _recorder(tools / "apt-get", log)
    (tools / "sudo").write_text('#!/bin/bash\n"$@"\n')
    (tools / "sudo").chmod(0o755)
    env = {"PATH": str(tools), "RAGEN_VENV": str(tmp_path / "venv"), "HOME": str(tmp_path),
           "RAGEN_TORCH_CPU_INDEX": cpu_index}  # fmt: skip
    bash = shutil.which("bash")
    done = subprocess.run([bash, str(tmp_path / "scripts" / "install.sh"), *args], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.returncode, log.read_text().splitlines(), done.stderr + done.stdout


def _installed(calls: list[str]) -> set[str]:
    line = next(c for c in calls if c.startswith("apt-get install"))
    return {word for word in line.split()[2:] if not word.startswith("-")}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_plain_install_installs_bubblewrap(tmp_path):
    status, calls, _ = _install(tmp_path)
    assert status == 0
    assert _installed(calls) == {"bubblewrap"}
    assert any(c.startswith("python -m pip install") and "torch==2.13.0" in c for c in calls)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_test_install_adds_docker_and_chromium(tmp_path):
    status, calls, _ = _install(tmp_path, "--test")
    assert status == 0
    assert _installed(calls) == {"bubblewrap", "docker.io", "chromium"}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_without_apt_the_install_says_what_to_install_and_goes_on(tmp_path):
    status, calls, stderr = _install(tmp_path, apt=False)
    assert status == 0
    assert "install bubblewrap with your package manager" in stderr
    assert any(c.startswith("python -m pip install") for c in calls)


def _torch_installs(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("python -m pip install") and "torch==2.13.0" in c]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_torch_cpu_comes_from_the_cpu_index_when_it_answers(tmp_path, cpu_index):
    status, calls, output = _install(tmp_path, "--torch", "cpu", cpu_index=cpu_index)
    assert status == 0, output
    assert len(_torch_installs(calls)) == 1 and f"--index-url {cpu_index}" in _torch_installs(calls)[0]
    assert f"the CPU build, from {cpu_index}" in output.splitlines()[-1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_torch_cpu_falls_back_to_the_default_index_and_says_so(tmp_path):
    status, calls, output = _install(tmp_path, "--torch=cpu")  # the default cpu_index refuses connections
    assert status == 0, output
    assert [c.split()[-1] for c in _torch_installs(calls)] == ["torch==2.13.0"]  # no --index-url
    last = output.splitlines()[-1]
    assert last.startswith("install.sh: ") and "could not be reached, so from pip's default index" in last


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_torch_skip_installs_no_torch_and_cuda_takes_the_default_index(tmp_path):
    status, calls, output = _install(tmp_path, "--test", "--torch", "skip")
    assert status == 0, output
    assert _torch_installs(calls) == [] and "--torch skip" in output.splitlines()[-1]
    (tmp_path / "cuda").mkdir()
    status, calls, output = _install(tmp_path / "cuda", "--torch", "cuda")
    assert status == 0, output
    assert [c.split()[-1] for c in _torch_installs(calls)] == ["torch==2.13.0"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--torch", "cdua"], "--torch must be one of auto, cpu, cuda, skip, got 'cdua'. Did you mean cuda?"),
        (["--torch"], "--torch needs a value"),
        (["--gpu"], "unknown option --gpu"),
        (["--vllm-cpu", "--torch", "cpu"], "--torch does not apply to --vllm-cpu"),
    ],
)
def test_a_bad_option_is_one_line_before_anything_is_installed(tmp_path, args, message):
    status, calls, output = _install(tmp_path, *args)
    lines = output.splitlines()
    assert status == 2 and calls == []
    assert len(lines) == 1 and lines[0].startswith("install.sh: ") and message in lines[0], output


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_an_old_openenv_core_is_removed_before_openenv_is_installed(tmp_path):
    # Both distributions install the `openenv` package: removing openenv-core after openenv is in would delete
    # openenv's files. The recorder answers `pip show` with success, as a venv that still has openenv-core does.
    status, calls, output = _install(tmp_path)
    assert status == 0, output
    pips = [c for c in calls if c.startswith("python -m pip")]
    removal = next(i for i, c in enumerate(pips) if c.startswith("python -m pip uninstall") and "openenv-core" in c)
    project = next(i for i, c in enumerate(pips) if c.startswith("python -m pip install") and " -e " in c)
    assert removal < project
