"""Which torch build ``scripts/install.sh`` installs, and from where (standard library only: it runs before the venv
holds anything).

    python3 scripts/torch_build.py auto     # prints the build, the reason, then pip's arguments, one per line

The pinned version is the same everywhere; what differs is the build. PyPI's Linux wheel of ``torch==2.13.0`` is
the CUDA build (it pulls several GB of ``nvidia-*`` wheels and triton), so:

- ``auto`` (the default): the CUDA build where an NVIDIA GPU is present, the CPU build where none is;
- ``cpu``: the CPU build, from PyTorch's CPU wheel index (``$RAGEN_TORCH_CPU_INDEX`` names a mirror). Where that
  index cannot be reached, pip's default index instead, and the reason says so: there the build is whatever that
  index (or a local wheel cache) holds, which ``install.sh`` reports after installing;
- ``cuda``: the CUDA build, from pip's default index;
- ``skip``: torch is left as it is (a build you installed yourself, or none: the ``llm`` extra then pulls one).
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

TORCH = "torch==2.13.0"
"""The pinned torch (vLLM 0.32.0, the ``gpu`` extra, pins the same)."""
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's CPU wheel index."""
REQUESTS = ("auto", "cpu", "cuda", "skip")


def wanted_build(request: str, gpu: bool) -> str:
    """The build to install, ``cpu``, ``cuda`` or ``skip``: the request, with ``auto`` decided by ``gpu``."""
    if request not in REQUESTS:
        close = difflib.get_close_matches(request, REQUESTS, n=1, cutoff=0.7)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise ValueError(f"--torch must be one of {', '.join(REQUESTS)}, got {request!r}.{hint}")
    if request != "auto":
        return request
    return "cuda" if gpu else "cpu"


def plan(build: str, cpu_index: str, cpu_index_reachable: bool) -> tuple[list[str], str]:
    """pip's arguments for ``build`` (empty for ``skip``) and the reason, a phrase for the install's last line."""
    if build == "skip":
        return [], "--torch skip: left as it was"
    if build == "cuda":
        return [TORCH], "the CUDA build, from pip's default index"
    if cpu_index_reachable:
        return [TORCH, "--index-url", cpu_index], f"the CPU build, from {cpu_index}"
    return [TORCH], f"{cpu_index} could not be reached, so from pip's default index"


def nvidia_gpu_present(proc: Path = Path("/proc/driver/nvidia/gpus"), smi: str | None = None) -> bool:
    """Whether the NVIDIA driver sees a GPU: an entry under ``proc`` (the driver's own listing), else a GPU line
    from ``nvidia-smi -L`` (``smi``: its path; looked up on PATH when None)."""
    if proc.is_dir() and any(proc.iterdir()):
        return True
    smi = smi or shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listing = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and any(line.startswith("GPU ") for line in listing.stdout.splitlines())


def reachable(url: str, timeout: float = 10.0) -> bool:
    """Whether ``url`` answers an HTTP GET within ``timeout`` seconds (a failure of any kind is False)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except Exception:  # DNS, refused, TLS, HTTP error, timeout: all mean pip cannot use it either
        return False


def main(argv: list[str]) -> int:
    """Print the build, the reason, then pip's arguments, one per line; a bad request is one line and exit 2."""
    request = argv[0] if argv else "auto"
    try:
        build = wanted_build(request, gpu=request == "auto" and nvidia_gpu_present())
    except ValueError as error:
        print(f"install.sh: {error}", file=sys.stderr)
        return 2
    cpu_index = os.environ.get("RAGEN_TORCH_CPU_INDEX", CPU_INDEX)
    ok = build == "cpu" and reachable(cpu_index.rstrip("/") + "/torch/")
    arguments, why = plan(build, cpu_index, ok)
    if request == "auto" and build != "skip":
        why = ("an NVIDIA GPU is present: " if build == "cuda" else "no NVIDIA GPU found: ") + why
    print("\n".join([build, why, *arguments]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
