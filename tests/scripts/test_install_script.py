"""scripts/install.sh's system packages: the plain install gets the code sandbox (bubblewrap) too.

The script runs for real from a copy of the repo layout; only the system tools it calls (apt-get, dpkg, sudo)
and the virtual environment's python are recorders, so nothing is installed and pip is not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install.sh"


def _recorder(path: Path, log: Path, status: int = 0) -> None:
    path.write_text(f'#!/bin/bash\necho "$(basename "$0") $*" >> {log}\nexit {status}\n')
    path.chmod(0o755)


def _install(tmp_path: Path, *args: str, apt: bool = True) -> tuple[int, list[str], str]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "install.sh")
    log = tmp_path / "calls.log"
    log.touch()
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    _recorder(venv_bin / "python", log)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("dirname", "id", "basename", "env"):
        os.symlink(shutil.which(name), tools / name)
    _recorder(tools / "dpkg", log, status=1)  # nothing is installed yet
    if apt:
        _recorder(tools / "apt-get", log)
    (tools / "sudo").write_text('#!/bin/bash\n"$@"\n')
    (tools / "sudo").chmod(0o755)
    env = {"PATH": str(tools), "RAGEN_VENV": str(tmp_path / "venv"), "HOME": str(tmp_path)}
    bash = shutil.which("bash")
    done = subprocess.run([bash, str(tmp_path / "scripts" / "install.sh"), *args], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.returncode, log.read_text().splitlines(), done.stderr


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
