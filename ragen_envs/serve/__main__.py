"""``python -m ragen_envs.serve --env ID [--env-kwargs JSON] [--host H] [--port P] ...``: serve one env id."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from ragen_envs.serve import INSTALL_HINT


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``python -m ragen_envs.serve``'s command line."""
    p = argparse.ArgumentParser(prog="python -m ragen_envs.serve", description=__doc__.split(":", 1)[1].strip())
    p.add_argument("--env", required=True, help="a registered id, e.g. ragen/Sokoban-v0 (or Sokoban-v0)")
    p.add_argument("--env-kwargs", default="{}", help="JSON object passed to gym.make, e.g. '{\"max_turns\": 5}'")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    p.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions (one env each)")
    p.add_argument("--idle-timeout", type=float, default=300.0, help="seconds of silence before a session is closed")
    p.add_argument("--make-timeout", type=float, default=120.0, help="seconds making a session's env may take")
    p.add_argument("--step-timeout", type=float, default=120.0, help="seconds one reset or step may take")
    p.add_argument("--send-timeout", type=float, default=30.0, help="seconds a reply may wait for a slow reader")
    p.add_argument("--max-message-bytes", type=int, default=1 << 20, help="largest request answered")
    p.add_argument("--request-timeout", type=float, default=10.0, help="seconds from connecting to a complete request")
    p.add_argument("--max-connections", type=int, default=None, help="connections at once (default 2*sessions+32)")
    p.add_argument("--max-connections-per-peer", type=int, default=None, help="from one address (default sessions+8)")
    p.add_argument(
        "--allow-origin", action="append", default=[], help="a browser origin allowed to connect (repeatable)"
    )
    p.add_argument("--allow-host", action="append", default=[], help="a Host name besides the address (repeatable)")
    token = p.add_mutually_exclusive_group()
    token.add_argument("--token-file", default=None, help="file holding a bearer token; required beyond loopback")
    token.add_argument("--token-env", default=None, help="environment variable holding the token (a container secret)")
    return p.parse_args(argv)


DEPLOYED_TOKEN_VAR = "RAGEN_ENVS_TOKEN"
DEPLOYED_HOSTS_VAR = "RAGEN_ENVS_ALLOW_HOSTS"


def deployed_argv(env_id: str, environ: dict[str, str], argv: list[str]) -> list[str]:
    """The command line a deployed env (a container, a Space) runs with: ``env_id`` on ``$HOST`` (default
    0.0.0.0) port ``$PORT`` (default 8000), the bearer token in ``$RAGEN_ENVS_TOKEN``, the comma-separated names in
    ``$RAGEN_ENVS_ALLOW_HOSTS`` admitted as ``Host`` (a Space's domain, a proxy's name), then ``argv``."""
    args = ["--env", env_id, "--host", environ.get("HOST", "0.0.0.0"), "--port", environ.get("PORT", "8000")]
    if environ.get(DEPLOYED_TOKEN_VAR):
        args += ["--token-env", DEPLOYED_TOKEN_VAR]
    for name in environ.get(DEPLOYED_HOSTS_VAR, "").split(","):
        if name.strip():
            args += ["--allow-host", name.strip()]
    return args + argv


def deployed_main(env_id: str, argv: list[str] | None = None) -> int:
    """The ``server`` entry point of a generated OpenEnv package (:mod:`ragen_envs.serve.manifest`): serve
    ``env_id`` as :func:`deployed_argv` says; further flags (``--max-sessions 8``) pass through."""
    import os

    return main(deployed_argv(env_id, dict(os.environ), sys.argv[1:] if argv is None else argv))


def env_token(name: str) -> str:
    """The bearer token in the environment variable ``name``; ``ValueError`` with one line."""
    import os

    from ragen_envs.serve.guard import check_token

    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"--token-env {name}: the variable is not set")
    try:
        return check_token(value.strip())
    except ValueError as e:
        raise ValueError(f"--token-env {name}: {e}") from None


def read_token(path: str) -> str:
    """The bearer token in the file at ``path`` (surrounding whitespace dropped); ``ValueError`` with one line."""
    from ragen_envs.serve.guard import check_token

    try:
        with open(path, encoding="utf-8") as f:
            return check_token(f.read(4097).strip())
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--token-file {path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    except ValueError as e:
        raise ValueError(f"--token-file {path}: {e}") from None


def main(argv: list[str] | None = None) -> int:
    """``python -m ragen_envs.serve``: check the env and options, then serve until stopped; exit code 2 on a bad option
    or a missing extra."""
    args = parse_args(argv)
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        print(f"error: --env-kwargs is not JSON ({e.msg} at column {e.colno}): {args.env_kwargs[:80]}", file=sys.stderr)
        return 2
    try:
        from ragen_envs.serve import require_extra

        require_extra()
        from ragen_envs.serve.server import ServeConfig, check_env, serve

        config = ServeConfig(
            env_id=args.env,
            env_kwargs=env_kwargs,
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout,
            make_timeout=args.make_timeout,
            step_timeout=args.step_timeout,
            send_timeout=args.send_timeout,
            max_message_bytes=args.max_message_bytes,
            request_timeout=args.request_timeout,
            max_connections=args.max_connections,
            max_connections_per_peer=args.max_connections_per_peer,
            allow_origins=tuple(args.allow_origin),
            allow_hosts=tuple(args.allow_host),
            token=read_token(args.token_file)
            if args.token_file
            else env_token(args.token_env)
            if args.token_env
            else None,
        )
        config = dataclasses.replace(config, env_id=check_env(config))
    except ImportError as e:
        print(f"error: {e}" if INSTALL_HINT in str(e) else f"error: {INSTALL_HINT} ({e})", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        serve(config)
    except ValueError as e:  # the connection caps do not fit the descriptor limit
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the port is taken, the address is not this machine's
        print(f"error: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
