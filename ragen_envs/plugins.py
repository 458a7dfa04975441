"""Envs of other packages: the ``ragen_envs.envs`` entry-point group, and which registered ids the harness runs.

A package declares a function that registers its envs with Gymnasium::

    [project.entry-points."ragen_envs.envs"]
    my-envs = "my_package.envs:register"      # def register(): gymnasium.register(id="mypkg/Guess-v0", ...)

After ``pip install`` its ids are listed by ``harness ls`` and accepted by ``harness run --env`` and ``harness
train``, in every worker process too. Any id in Gymnasium's registry is accepted when its env is a
:class:`ragen_envs.core.TextEnv` (text in, text out, the info keys and the oracle the harness reads); other envs get
one line saying why not. :func:`ragen_envs.contract.check_text_env` checks such an env against the contract.
"""

from __future__ import annotations

import threading
import warnings

ENV_ENTRY_POINT_GROUP = "ragen_envs.envs"
"""The entry-point group through which installed packages register envs (see the module docstring)."""

_LOADED: dict[str, tuple[str, ...]] = {}  # entry point name -> the ids it registered (loaded once per process)
_LOADING = threading.RLock()


def load_env_plugins() -> tuple[str, ...]:
    """Load every ``ragen_envs.envs`` entry point not loaded yet; returns the ids they registered (all loaded
    so far). A broken package is a warning naming it, so one bad install does not hide every other env."""
    from importlib.metadata import entry_points

    from gymnasium.envs.registration import registry

    with _LOADING:
        for point in entry_points(group=ENV_ENTRY_POINT_GROUP):
            if point.name in _LOADED:
                continue
            before = set(registry)
            _LOADED[point.name] = ()
            try:
                point.load()()
            except Exception as error:
                warnings.warn(
                    f"env entry point {point.name} = {point.value!r} failed to load: {type(error).__name__}: {error}",
                    stacklevel=2,
                )
            _LOADED[point.name] = tuple(sorted(set(registry) - before))
        return tuple(sorted({env_id for ids in _LOADED.values() for env_id in ids}))


def ensure_registered(env_id: str) -> None:
    """Load the env entry points when ``env_id`` is not in Gymnasium's registry (a fresh worker process)."""
    from gymnasium.envs.registration import registry

    if env_id not in registry:
        load_env_plugins()


def env_class(env_id: str) -> type | None:
    """The class a registered id builds, or None when its entry point is a factory function (known only by
    building one)."""
    from gymnasium.envs.registration import load_env_creator, registry

    creator = registry[env_id].entry_point
    creator = load_env_creator(creator) if isinstance(creator, str) else creator
    return creator if isinstance(creator, type) else None


def text_env_problem(env_id: str) -> str | None:
    """Why the harness cannot run the registered ``env_id`` (its env is not a TextEnv), or None when it can."""
    import gymnasium as gym

    from ragen_envs.core import TextEnv

    try:
        cls = env_class(env_id)
        if cls is None:
            env = gym.make(env_id)
            cls = type(env.unwrapped)
            env.close()
    except Exception as error:  # a plugin env that fails to import or build: the reason is the answer
        return f"{env_id} cannot be built: {type(error).__name__}: {error}"
    if issubclass(cls, TextEnv):
        return None
    return (
        f"{env_id} is registered, but its env {cls.__module__}.{cls.__qualname__} is not a ragen_envs.core.TextEnv "
        "(text observations and actions, the info keys and an oracle): the harness cannot run it; docs/extending.md "
        "shows how to write one"
    )
