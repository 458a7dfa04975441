"""OpenEnv packages for every registered env, generated from the registry: ``python -m ragen_envs.serve.manifest``
writes ``deploy/openenv/<name>/`` (``--check``: exit 1 naming every file that differs, as the tests do).

One package per env id, named after it (``ragen/Sokoban-8x8-v0`` -> ``ragen_sokoban_8x8_v0``), holding what
``openenv push`` uploads as a Hugging Face Space and what OpenEnv's ``AutoEnv`` discovers once the package is
installed (distribution ``openenv-<name>``):

- ``openenv.yaml``: the manifest (``spec_version: 1``, name, version, description, ``type: space``, port 8000);
- ``Dockerfile``: ``python:3.11-slim`` with ``ragen-envs[serve]`` at this version (``--build-arg RAGEN_ENVS=...``
  installs another requirement: a wheel, a git URL) and the package, running its ``server`` entry point on port
  8000 with a ``HEALTHCHECK`` on ``/health``;
- ``server/app.py``: the entry point (``main``, the ``server`` script of ``pyproject.toml``):
  :func:`ragen_envs.serve.__main__.deployed_main` for this id (``$PORT``, the token in ``$RAGEN_ENVS_TOKEN``, Host
  names in ``$RAGEN_ENVS_ALLOW_HOSTS``);
- ``client.py``: the typed client under the class names ``AutoEnv`` infers (``RagenSokobanV0Env``, ``...Action``,
  ``...Observation``), from :mod:`ragen_envs.serve.openenv_client`;
- ``README.md``: the Space card (front matter ``sdk: docker``, ``app_port: 8000``) and how to run it;
- ``pyproject.toml``, ``__init__.py``, ``server/__init__.py``.

The files are a function of the registry and the version only: regenerate after adding an env or bumping the
version (the test fails until the committed files equal what this writes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_OUT = Path("deploy") / "openenv"
"""Relative to the working directory: the repository root."""
HEADER = "Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."
PORT = 8000
BUILD_OUTPUT = re.compile(r"(^|/)(__pycache__|build|[^/]*\.egg-info)/")
"""What building or importing a package leaves in its directory (git ignores it too): not a stale file."""
# Extras and system packages an env needs beyond the serve extra, by its module (each named in the env's own
# install hint: ragen_envs.webshop.search, ragen_envs.searchqa.retrieval, ragen_envs.sandbox).
EXTRAS = {"ragen_envs.webshop": ("webshop",), "ragen_envs.searchqa": ("search",)}
SYSTEM_PACKAGES = {"ragen_envs.code": ("bubblewrap",)}


@dataclass(frozen=True)
class EnvPackage:
    """What the files of one env's package are made from."""

    env_id: str
    name: str
    """The package name: ``ragen/Sokoban-8x8-v0`` -> ``ragen_sokoban_8x8_v0``."""
    summary: str
    """The first line of the env class's docstring."""
    tools: tuple[str, ...]
    """The MCP tools: ``reset``, ``step`` and the env's action tools (as ``move(direction)``)."""
    extras: tuple[str, ...]
    system_packages: tuple[str, ...]
    version: str

    @property
    def class_prefix(self) -> str:
        """The class-name stem ``AutoEnv`` infers from the name (``RagenSokoban8x8V0``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


def package_name(env_id: str) -> str:
    """``ragen/Sokoban-8x8-v0`` -> ``ragen_sokoban_8x8_v0`` (a Python module name; no ``_env`` inside, which
    ``AutoEnv`` strips)."""
    name = re.sub(r"[^0-9a-z]+", "_", env_id.lower()).strip("_")
    if "_env" in name:
        raise ValueError(f"{env_id}: its package name {name!r} holds '_env', which AutoEnv would strip")
    return name


def packages() -> list[EnvPackage]:
    """One :class:`EnvPackage` per env this project registers (ids of installed plugins are theirs to package)."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import ragen_envs
    from ragen_envs.serve.mcp import tool_list

    out = []
    for env_id in ragen_envs.registered_ids():
        entry = gym.spec(env_id).entry_point
        if not isinstance(entry, str) or not entry.startswith("ragen_envs."):
            continue
        module, _, _ = entry.partition(":")
        cls = load_env_creator(entry)
        summary = (cls.__doc__ or env_id).strip().splitlines()[0].replace("``", "`")
        tools = tuple(
            tool["name"] + "(" + ", ".join(tool["inputSchema"].get("properties", {})) + ")"
            for tool in tool_list(cls.action_tools)
        )
        extras, system = (
            next((v for k, v in t.items() if module.startswith(k)), ()) for t in (EXTRAS, SYSTEM_PACKAGES)
        )
        out.append(EnvPackage(env_id, package_name(env_id), summary, tools, extras, system, ragen_envs.__version__))
    return out


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML and a TOML string too


def render(pkg: EnvPackage) -> dict[str, str]:
    """The package's files, by path relative to its directory."""
    extras = ",".join(("serve", *pkg.extras))
    requirement = f"ragen-envs[{extras}]=={pkg.version}"
    cls = pkg.class_prefix
    files: dict[str, str] = {}
    files["openenv.yaml"] = (
        f"# {HEADER}\n"
        "spec_version: 1\n"
        f"name: {pkg.name}\n"
        f"version: {pkg.version}\n"
        f"description: {_q(f'{pkg.env_id} from ragen-envs: {pkg.summary}')}\n"
        "type: space\n"
        "runtime: fastapi\n"
        f"port: {PORT}\n"
    )
    apt = ""
    if pkg.system_packages:
        apt = (
            "RUN apt-get update && apt-get install -y --no-install-recommends "
            + " ".join(pkg.system_packages)
            + " && rm -rf /var/lib/apt/lists/*\n"
        )
    health = (
        "import os, urllib.request as u; "
        "u.urlopen(u.Request('http://127.0.0.1:' + os.environ.get('PORT', '8000') + '/health', "
        "headers={'Authorization': 'Bearer ' + os.environ.get('RAGEN_ENVS_TOKEN', '')}), timeout=3)"
    )
    files["Dockerfile"] = (
        f"# {HEADER}\n"
        f"# {pkg.env_id} over OpenEnv (WebSocket /ws, MCP tools /mcp). Run it with a bearer token:\n"
        f'#   docker run -p {PORT}:{PORT} -e RAGEN_ENVS_TOKEN="$(cat token.txt)" IMAGE\n'
        "FROM python:3.11-slim\n"
        f"{apt}"
        f'ARG RAGEN_ENVS="{requirement}"\n'
        'RUN pip install --no-cache-dir "$RAGEN_ENVS"\n'
        "WORKDIR /app/env\n"
        "COPY . /app/env\n"
        "RUN pip install --no-cache-dir --no-deps /app/env\n"
        "RUN useradd --create-home ragen\n"
        "USER ragen\n"
        f"ENV PORT={PORT} HF_HUB_OFFLINE=1\n"
        f"EXPOSE {PORT}\n"
        f'HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", "-c", {_q(health)}]\n'
        'CMD ["server"]\n'
    )
    files["server/__init__.py"] = f'"""{pkg.env_id}\'s OpenEnv server. {HEADER}"""\n'
    files["server/app.py"] = (
        f'"""{pkg.env_id} over OpenEnv: ``main`` serves it (the package\'s ``server`` script; ``python -m\n'
        f"{pkg.name}.server.app``). ``$PORT`` (default {PORT}), ``$HOST`` (default 0.0.0.0), the bearer token in\n"
        "``$RAGEN_ENVS_TOKEN`` (required off loopback), Host names in ``$RAGEN_ENVS_ALLOW_HOSTS``; further flags of\n"
        "``python -m ragen_envs.serve`` pass through.\n\n"
        f'{HEADER}\n"""\n\n'
        "import sys\n\n"
        "from ragen_envs.serve.__main__ import deployed_main\n\n"
        f"ENV_ID = {_q(pkg.env_id)}\n\n\n"
        "def main(argv: list[str] | None = None) -> int:\n"
        '    """Serve ``ENV_ID`` until stopped."""\n'
        "    return deployed_main(ENV_ID, argv)\n\n\n"
        'if __name__ == "__main__":\n'
        "    sys.exit(main())\n"
    )
    files["client.py"] = (
        f'"""The typed OpenEnv client of {pkg.env_id} (the names ``AutoEnv`` looks for). {HEADER}"""\n\n'
        "from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation\n\n"
        f'__all__ = ["{cls}Action", "{cls}Env", "{cls}Observation"]\n\n'
        f"{cls}Action = RagenAction\n"
        f"{cls}Observation = RagenObservation\n\n\n"
        f"class {cls}Env(RagenEnvClient):\n"
        f'    """OpenEnv\'s ``EnvClient`` for a {pkg.env_id} server: ``await env.reset(seed=3)``,\n'
        '    ``await env.step(model_text)``."""\n'
    )
    files["__init__.py"] = (
        f'"""{pkg.env_id} as an OpenEnv environment. {HEADER}"""\n\n'
        f"from .client import {cls}Action, {cls}Env, {cls}Observation\n\n"
        f'__all__ = ["{cls}Action", "{cls}Env", "{cls}Observation"]\n'
    )
    files["pyproject.toml"] = (
        f"# {HEADER}\n"
        "[build-system]\n"
        'requires = ["setuptools>=68"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        "[project]\n"
        f'name = "openenv-{pkg.name}"\n'
        f'version = "{pkg.version}"\n'
        f"description = {_q(f'{pkg.env_id} from ragen-envs as an OpenEnv environment')}\n"
        'requires-python = ">=3.10"\n'
        'license = { text = "Apache-2.0" }\n'
        f'dependencies = ["{requirement}"]\n\n'
        "[project.scripts]\n"
        f'server = "{pkg.name}.server.app:main"\n\n'
        "[tool.setuptools]\n"
        f'packages = ["{pkg.name}", "{pkg.name}.server"]\n'
        f'package-dir = {{ "{pkg.name}" = ".", "{pkg.name}.server" = "server" }}\n\n'
        "[tool.setuptools.package-data]\n"
        f'{pkg.name} = ["openenv.yaml", "README.md"]\n'
    )
    tools = ", ".join(f"`{tool}`" for tool in pkg.tools)
    image = pkg.name.replace("_", "-")
    files["README.md"] = (
        "---\n"
        f"title: {_q(pkg.env_id)}\n"
        "sdk: docker\n"
        f"app_port: {PORT}\n"
        "pinned: false\n"
        "tags:\n  - openenv\n  - ragen-envs\n"
        "---\n\n"
        f"# {pkg.env_id}\n\n"
        f"{pkg.summary} From ragen-envs, served over OpenEnv.\n\n"
        f"<!-- {HEADER} -->\n\n"
        '- `/ws`: OpenEnv\'s WebSocket session (`reset` with a seed, `step` with `{"response": text}`): the episode\n'
        f'  `gym.make("{pkg.env_id}")` plays, byte for byte.\n'
        f"- `/mcp`: the env as MCP tools: {tools}.\n"
        "- `/health`, `/metadata`, `/schema`.\n\n"
        "Every request carries `Authorization: Bearer <token>`, the token the server was given in\n"
        "`RAGEN_ENVS_TOKEN` (a Space secret). Names the server is reached by (a Space's domain) go in\n"
        "`RAGEN_ENVS_ALLOW_HOSTS`, comma-separated. The image installs `" + requirement + "`; `--build-arg\n"
        "RAGEN_ENVS=...` installs another pip requirement instead (a wheel copied into this directory, a git URL).\n\n"
        "```bash\n"
        f"docker build -t {image} .\n"
        f'docker run -p {PORT}:{PORT} -e RAGEN_ENVS_TOKEN="$(cat token.txt)" {image}\n'
        "```\n\n"
        "```python\n"
        f"from {pkg.name} import {cls}Env\n\n"
        'headers = {"Authorization": f"Bearer {token}"}\n'
        f'async with {cls}Env(base_url="http://127.0.0.1:{PORT}", headers=headers) as env:\n'
        '    result = await env.reset(seed=3)  # result.observation.text, .info["instructions"]\n'
        "    result = await env.step(model_text)\n"
        "```\n"
    )
    return files


def generate() -> dict[str, str]:
    """Every package's files, by path relative to the output directory (``<name>/<file>``)."""
    return {f"{pkg.name}/{path}": text for pkg in packages() for path, text in render(pkg).items()}


def differences(out: Path, files: dict[str, str]) -> list[str]:
    """Paths under ``out`` that differ from ``files``: missing, changed, or there but not generated."""
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} if out.is_dir() else set()
    changed = [p for p, text in files.items() if p not in present or (out / p).read_text(encoding="utf-8") != text]
    return sorted(changed + [p for p in present - set(files) if not BUILD_OUTPUT.search(p)])


def write(out: Path, files: dict[str, str]) -> None:
    """Write ``files`` under ``out`` and delete files there that are not generated."""
    for path in differences(out, files):
        target = out / path
        if path in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(files[path], encoding="utf-8")
        else:
            target.unlink()
    for directory in sorted((d for d in out.rglob("*") if d.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()


def main(argv: list[str] | None = None) -> int:
    """``python -m ragen_envs.serve.manifest [--out DIR] [--check]``."""
    p = argparse.ArgumentParser(prog="python -m ragen_envs.serve.manifest", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files there differ")
    args = p.parse_args(argv)
    files = generate()
    stale = differences(args.out, files)
    if args.check:
        for path in stale:
            print(f"stale: {args.out / path}", file=sys.stderr)
        if stale:
            print("regenerate with: python -m ragen_envs.serve.manifest", file=sys.stderr)
        return 1 if stale else 0
    write(args.out, files)
    envs = len({path.split("/")[0] for path in files})
    print(f"{len(files)} files for {envs} envs in {args.out} ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
