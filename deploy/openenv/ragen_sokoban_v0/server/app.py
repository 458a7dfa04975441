"""ragen/Sokoban-v0 over OpenEnv: ``main`` serves it (the package's ``server`` script; ``python -m
ragen_sokoban_v0.server.app``). ``$PORT`` (default 8000), ``$HOST`` (default 0.0.0.0), the bearer token in
``$RAGEN_ENVS_TOKEN`` (required off loopback), Host names in ``$RAGEN_ENVS_ALLOW_HOSTS``; further flags of
``python -m ragen_envs.serve`` pass through.

Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit.
"""

import sys

from ragen_envs.serve.__main__ import deployed_main

ENV_ID = "ragen/Sokoban-v0"


def main(argv: list[str] | None = None) -> int:
    """Serve ``ENV_ID`` until stopped."""
    return deployed_main(ENV_ID, argv)


if __name__ == "__main__":
    sys.exit(main())
