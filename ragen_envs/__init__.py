"""ragen-envs: Gymnasium text environments for training and evaluating LLM agents with RL.

Importing this package only registers the ``ragen/*`` ids (entry points are strings, so no env module is
imported until ``gym.make``); ``gym.make("ragen_envs:ragen/Sokoban-v0")`` imports it for you.
"""

from gymnasium.envs.registration import register

from ragen_envs._version import __version__

__all__ = ["__version__", "registered_ids", "resolve_env_id"]


def registered_ids() -> list[str]:
    """Every ``ragen/*`` id in Gymnasium's registry, sorted, then the ids installed packages register through the
    ``ragen_envs.envs`` entry-point group (:mod:`ragen_envs.plugins`)."""
    from gymnasium.envs.registration import registry

    from ragen_envs.plugins import load_env_plugins

    plugin_ids = load_env_plugins()
    own = sorted(env_id for env_id in registry if env_id.startswith("ragen/"))
    return own + [env_id for env_id in plugin_ids if env_id not in own]


def resolve_env_id(name: str) -> str:
    """The registered id for ``name`` (an id, or ``Name-vN`` without the ``ragen/`` prefix) whose env is a
    ``TextEnv``: a ``ragen/*`` id, an installed package's, or any other in Gymnasium's registry; else "did you mean"
    (or, for a registered env of another kind, why the harness cannot run it)."""
    import difflib

    from gymnasium.envs.registration import registry

    from ragen_envs.plugins import text_env_problem

    ids = registered_ids()
    for candidate in (name, f"ragen/{name}"):
        if candidate in ids and candidate.startswith("ragen/"):
            return candidate
        if candidate in ids or candidate in registry:
            problem = text_env_problem(candidate)
            if problem:
                raise ValueError(problem)
            return candidate
    close = difflib.get_close_matches(name, ids, n=1, cutoff=0.6) or difflib.get_close_matches(
        f"ragen/{name}", ids, n=1, cutoff=0.6
    )
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"Unknown env {name!r}.{hint} Available: {', '.join(ids)}")


# ---- planning -------------------------------------------------------------------------------------------
register(id="ragen/Bandit-v0", entry_point="ragen_envs.bandit:BanditEnv")
register(id="ragen/Sokoban-v0", entry_point="ragen_envs.sokoban.env:SokobanEnv")
register(
    id="ragen/Sokoban-8x8-v0",
    entry_point="ragen_envs.sokoban.env:SokobanEnv",
    kwargs={"room_size": 8, "num_boxes": 2, "difficulty": 8, "max_turns": 10, "max_actions_per_turn": 3},
)
register(
    id="ragen/Sokoban-10x10-v0",
    entry_point="ragen_envs.sokoban.env:SokobanEnv",
    kwargs={"room_size": 10, "num_boxes": 3, "difficulty": 10, "max_turns": 20, "max_actions_per_turn": 5},
)
register(id="ragen/FrozenLake-v0", entry_point="ragen_envs.frozen_lake:FrozenLakeEnv")
register(
    id="ragen/FrozenLake-8x8-v0",
    entry_point="ragen_envs.frozen_lake:FrozenLakeEnv",
    kwargs={"size": 8, "frozen_prob": 0.8, "max_turns": 10},
)

# ---- math -----------------------------------------------------------------------------------------------
register(id="ragen/Countdown-v0", entry_point="ragen_envs.math.countdown:CountdownEnv")
register(id="ragen/MathWord-v0", entry_point="ragen_envs.math.math_word:MathWordEnv")
register(id="ragen/MathQA-v0", entry_point="ragen_envs.math.math_qa:MathQAEnv")  # default: the shipped sample

# ---- code -----------------------------------------------------------------------------------------------
register(id="ragen/CodeExec-v0", entry_point="ragen_envs.code.env:CodeExecEnv")

# ---- web ------------------------------------------------------------------------------------------------
register(id="ragen/WebShop-v0", entry_point="ragen_envs.webshop.env:WebShopEnv")

# ---- search ---------------------------------------------------------------------------------------------
register(id="ragen/SearchQA-v0", entry_point="ragen_envs.searchqa.env:SearchQAEnv")
