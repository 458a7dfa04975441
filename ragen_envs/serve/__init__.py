"""Every ``ragen/*`` env over OpenEnv's WebSocket protocol, and a client that plays it like ``gym.make``.

    python -m ragen_envs.serve --env ragen/Sokoban-v0 --port 0          # prints the address it bound

    from ragen_envs.serve import Client
    with Client("http://127.0.0.1:8000") as env:
        obs, info = env.reset(seed=3)
        obs, reward, terminated, truncated, info = env.step("<think>…</think><answer>Left</answer>")

Same seed, same responses: the same bytes as ``gym.make`` in process. Browser pages of other sites are refused
(``--allow-origin`` admits one); beyond loopback the server needs ``--token-file`` and clients ``Client(url,
token=...)``. OpenEnv's own clients (``GenericEnvClient``) speak to the server too, with ``{"response": text}`` as
the action; agents that call tools reach the same env over MCP at ``/mcp`` (tools ``reset``, ``step`` and the
env's actions: :mod:`ragen_envs.serve.mcp`).

Needs the ``serve`` extra (openenv, FastAPI, uvicorn, websockets); importing ``ragen_envs`` does not.
"""

from __future__ import annotations

from typing import Any

INSTALL_HINT = "ragen_envs.serve needs the 'serve' extra: pip install 'ragen-envs[serve]'"
_REQUIRED = ("openenv", "fastapi", "uvicorn", "websockets")

__all__ = ["Client", "ServerError", "ServerGone", "ServeConfig", "make_app", "require_extra"]


def require_extra() -> None:
    """``ImportError`` with the install command when a package of the ``serve`` extra is missing."""
    import importlib.util

    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ImportError:  # a broken install counts as missing
            return True

    missing = [name for name in _REQUIRED if absent(name)]
    if missing:
        raise ImportError(f"{INSTALL_HINT} (missing: {', '.join(missing)})")


def __getattr__(name: str) -> Any:
    # Lazy, so that `import ragen_envs.serve` (and its docs) work without the extra.
    if name in ("Client", "ServerError", "ServerGone"):
        require_extra()
        from ragen_envs.serve import client

        return getattr(client, name)
    if name in ("ServeConfig", "make_app"):
        require_extra()
        from ragen_envs.serve import server

        return getattr(server, name)
    raise AttributeError(f"module 'ragen_envs.serve' has no attribute {name!r}")
