"""Which torch build is installed, read from its ``version.py`` without importing torch.

Importing torch and transformers takes seconds, tens of seconds on a cold disk cache or a busy machine; a
request that cannot work (``--device cuda`` on a CPU build) is answered from this file first.

    python -m harness.device      # e.g. "torch 2.13.0+cpu (CPU build)"
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TorchBuild:
    """An installed torch as its ``version.py`` records it."""

    version: str
    cuda: str | None
    """The CUDA version it was built with; None for a CPU (or ROCm) build."""
    hip: str | None = None
    """The ROCm/HIP version; ROCm builds answer ``torch.cuda`` calls too."""

    @property
    def has_gpu_support(self) -> bool:
        """Whether ``--device cuda`` can work with this build (on a machine with the GPU)."""
        return self.cuda is not None or self.hip is not None

    def __str__(self) -> str:
        kind = f"CUDA {self.cuda}" if self.cuda else f"ROCm {self.hip}" if self.hip else "CPU"
        return f"torch {self.version} ({kind} build)"


def torch_build(version_file: Path | None = None) -> TorchBuild | None:
    """The installed torch's build (``version_file``: that file instead of torch's own); None when torch is not
    installed or its ``version.py`` cannot be read (then only importing torch can tell)."""
    if version_file is None:
        spec = importlib.util.find_spec("torch")  # locates the package without running its __init__
        if spec is None or not spec.submodule_search_locations:
            return None
        version_file = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        tree = ast.parse(version_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    if not isinstance(values.get("__version__"), str):
        return None
    return TorchBuild(values["__version__"], values.get("cuda"), values.get("hip"))


def check_device(device: str) -> None:
    """Raise ``ValueError`` when ``device`` asks for CUDA and the installed torch is a CPU build (answered without
    importing torch; whether a GPU is visible is left to torch)."""
    if not device.startswith("cuda"):
        return
    build = torch_build()
    if build is not None and not build.has_gpu_support:
        raise ValueError(
            f"--device {device}: CUDA is not available (this torch, {build.version}, is built without CUDA); "
            "use --device cpu or --device auto, or install the CUDA build (bash scripts/install.sh --torch cuda)"
        )


if __name__ == "__main__":
    print(torch_build() or "torch: not installed")
