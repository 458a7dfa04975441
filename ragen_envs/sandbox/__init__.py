"""Run untrusted (model-written) Python in a sandbox with resource limits.

```python
from ragen_envs import sandbox
res = sandbox.run("print(input()[::-1])", stdin="abc", limits=sandbox.Limits(wall_s=5, memory_mb=512))
res.stdout, res.stderr, res.exit_code, res.timed_out, res.violation, res.wall_s, res.backend
sandbox.available_backends()      # e.g. ["bwrap", "docker"]
```

Backends, in order of preference: ``"bwrap"`` (bubblewrap, the default on Linux), ``"docker"`` (when an
engine is reachable through the docker SDK, ``pip install 'ragen-envs[docker]'``). With neither, ``run``
fails closed with :class:`SandboxUnavailable`. ``"unsafe-subprocess"`` runs code on the host with no
isolation and is used only when asked for by name with ``allow_unsafe=True``; its results say
``unsafe=True``. ``"pool"`` is a warm pool of bubblewrap sandboxes (see ``pool.py``).
"""

from __future__ import annotations

import difflib
import os
import threading

from ragen_envs.sandbox.base import VIOLATIONS, Backend, Limits, Result, SandboxUnavailable

__all__ = [
    "VIOLATIONS",
    "Backend",
    "Limits",
    "Result",
    "SandboxUnavailable",
    "available_backends",
    "get_backend",
    "run",
]

SECURE_BACKENDS = ("bwrap", "docker")
BACKENDS = (*SECURE_BACKENDS, "pool", "unsafe-subprocess")
INSTALL_HINT = (
    "no secure sandbox backend is available: install bubblewrap (`apt-get install bubblewrap`; it needs "
    "unprivileged user namespaces) or make a Docker engine reachable and `pip install 'ragen-envs[docker]'`. "
    "To run trusted code without isolation, pass backend='unsafe-subprocess', allow_unsafe=True."
)

_cache: dict[str, Backend] = {}
_cache_lock = threading.Lock()


def _backend_class(name: str) -> type[Backend]:
    if name == "bwrap":
        from ragen_envs.sandbox.bwrap import BwrapBackend

        return BwrapBackend
    if name == "docker":
        from ragen_envs.sandbox.docker_backend import DockerBackend

        return DockerBackend
    if name == "pool":
        from ragen_envs.sandbox.pool import PoolBackend

        return PoolBackend
    if name == "unsafe-subprocess":
        from ragen_envs.sandbox.subprocess_backend import UnsafeSubprocessBackend

        return UnsafeSubprocessBackend
    hint = difflib.get_close_matches(str(name), BACKENDS, n=1)
    did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
    raise ValueError(f"backend must be one of {('auto', 'auto-pool', *BACKENDS)}, got {name!r}.{did_you_mean}")


def available_backends() -> list[str]:
    """The secure backends that work on this machine, best first (never lists the unsafe one)."""
    return [name for name in SECURE_BACKENDS if _backend_class(name).available()]


def get_backend(name: str = "auto", *, allow_unsafe: bool = False) -> Backend:
    """A (shared per process, cached) backend by name.

    ``"auto"`` is the best available secure backend (bwrap, else docker); ``"auto-pool"`` is the warm pool
    when bubblewrap works, else the same as ``"auto"``.
    """
    if name == "auto-pool":
        name = "pool" if _backend_class("pool").available() else "auto"
    if name == "auto":
        found = available_backends()
        if not found:
            raise SandboxUnavailable(INSTALL_HINT)
        name = found[0]
    cls = _backend_class(name)
    if cls.unsafe:
        if not allow_unsafe:
            raise ValueError(
                f"backend {name!r} runs code on the host with no isolation; pass allow_unsafe=True to use it anyway"
            )
        with _cache_lock:
            return _cache.setdefault(f"{name}@{os.getpid()}", cls(i_understand_this_is_unsafe=True))
    if not cls.available():
        raise SandboxUnavailable(f"the {name!r} backend is not available here; " + INSTALL_HINT)
    # Keyed by process: a forked worker must not share its parent's pool sockets or docker client.
    key = f"{name}@{os.getpid()}"
    with _cache_lock:
        if key not in _cache:
            _cache[key] = cls()
        return _cache[key]


def run(
    code: str,
    stdin: str | bytes = "",
    limits: Limits | None = None,
    *,
    backend: str | Backend = "auto",
    allow_unsafe: bool = False,
) -> Result:
    """Run Python ``code`` as a program in a sandbox and return what happened; see the module docstring."""
    if not isinstance(code, str):
        raise ValueError(f"code must be a str, got {type(code).__name__}")
    if not isinstance(stdin, (str, bytes)):
        raise ValueError(f"stdin must be str or bytes, got {type(stdin).__name__}")
    chosen = backend if isinstance(backend, Backend) else get_backend(backend, allow_unsafe=allow_unsafe)
    return chosen.run(code, stdin, limits or Limits())
