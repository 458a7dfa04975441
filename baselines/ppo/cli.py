"""``harness train [PRESET-or-CONFIG.json] [--field value ...]``: the learner from the command line.

Every ``PPOConfig`` field is a flag (``--actor-lr 1e-6``, ``--env-kwargs '{"max_turns": 3}'``,
``--no-tensorboard``); its help text is the field's docstring in config.py, so it is written once.
Precedence: preset or JSON file, then flags. A run resumes from ``<out-dir>/checkpoint.safetensors`` unless ``--fresh``;
an ``--out-dir`` recorded with a different config is refused unless only ``--iterations`` changed.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
import typing
from pathlib import Path

from baselines.ppo import config as config_module
from baselines.ppo.config import PRESETS, PPOConfig


def _field_docs() -> dict[str, str]:
    """Field name → the docstring under it in config.py (parsed, so help text is never duplicated)."""
    tree = ast.parse(Path(config_module.__file__).read_text())
    docs: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "PPOConfig":
            body = node.body
            for a, b in zip(body, body[1:], strict=False):  # each statement with the next: one pair fewer
                if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant):
                    docs[a.target.id] = str(b.value.value)
    return docs


def _parser_for(annotation: typing.Any):
    if annotation in (int, float, str):
        return annotation
    text = str(annotation)
    if "dict" in text:
        return json.loads
    if "int" in text and "None" in text:
        return lambda v: None if v.lower() == "none" else int(v)
    return str


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the learner's arguments to ``parser``: a preset or config file, ``--fresh``, a flag per config field."""
    parser.add_argument("base", nargs="?", help=f"a preset ({', '.join(PRESETS)}) or a config .json file")
    parser.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint in --out-dir")
    docs = _field_docs()
    hints = typing.get_type_hints(PPOConfig)
    for f in dataclasses.fields(PPOConfig):
        flag = "--" + f.name.replace("_", "-")
        if hints[f.name] is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None,
                                help=docs.get(f.name, ""))  # fmt: skip
        else:
            parser.add_argument(flag, dest=f.name, type=_parser_for(hints[f.name]), default=None,
                                help=docs.get(f.name, ""))  # fmt: skip


def config_from_args(args: argparse.Namespace) -> PPOConfig:
    """The config the arguments ask for (preset or file, then flags); raises ``ValueError`` naming a bad value."""
    values: dict[str, typing.Any] = {}
    if args.base:
        if args.base in PRESETS:
            values.update(PRESETS[args.base])
        elif Path(args.base).is_file():
            values.update(json.loads(Path(args.base).read_text()))
        else:
            raise ValueError(f"{args.base!r} is neither a preset ({', '.join(PRESETS)}) nor a config file")
    for f in dataclasses.fields(PPOConfig):
        value = getattr(args, f.name, None)
        if value is not None:
            values[f.name] = value
    if "env_id" in values:  # the harness's "did you mean", before the learner starts
        from ragen_envs import resolve_env_id

        values["env_id"] = resolve_env_id(str(values["env_id"]))
    config = PPOConfig.from_dict(values)
    # what a stat or a metadata read can answer comes before importing torch and transformers (seconds)
    from harness.agents.hf import check_model_source
    from harness.device import check_device

    if config.model:
        check_model_source(config.model, flag="--model ")
    if str(config.device).startswith("cuda"):
        check_device(str(config.device))
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"--device {config.device}: CUDA is not available here; use --device cpu or --device auto")
    return config


RESUMABLE_FIELDS = ("iterations",)
"""Fields a resumed ``--out-dir`` may change: continuing a run for more iterations is the same run."""


def check_out_dir(config: PPOConfig) -> None:
    """Refuse to continue a run in ``config.out_dir`` recorded with a different config (beyond ``RESUMABLE_FIELDS``):
    its checkpoint would resume under the new config and both runs' logs would mix."""
    path = Path(config.out_dir) / "config.json"
    if not path.exists():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(recorded, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a training config ({exc}); use --fresh or a new --out-dir") from None
    current = json.loads(config.to_json())
    changed = [
        f"{name} {recorded.get(name)!r} -> {current.get(name)!r}"
        for name in sorted(set(recorded) | set(current))
        if name not in RESUMABLE_FIELDS and recorded.get(name) != current.get(name)
    ]
    if changed:
        raise ValueError(
            f"--out-dir {config.out_dir} holds a run with a different config (changed: {'; '.join(changed)}); only "
            f"{', '.join('--' + f.replace('_', '-') for f in RESUMABLE_FIELDS)} may change on resume: pass --fresh "
            "to start over there, or choose a new --out-dir"
        )


def run_train(args: argparse.Namespace) -> int:
    """Train as the arguments say (resuming ``--out-dir`` unless ``--fresh``), one line per iteration; returns 0."""
    config = config_from_args(args)
    if not args.fresh:
        check_out_dir(config)
    from baselines.ppo.trainer import Trainer  # torch: after the checks above, which answer without it

    trainer = Trainer(config)
    try:
        rows = trainer.train(resume=not args.fresh)
    finally:
        trainer.close()
    if trainer.dist.main:
        for row in rows:
            print(
                f"iter {row['iteration']:4d}  success {row['rollout/success']:.3f}  return {row['rollout/return']:+.3f}"
                f"  kept {row['rollout/filter_kept_ratio']:.2f}"
                + (
                    f"  mi {row['collapse_first_turn/mi_estimate']:+.3f}"
                    if "collapse_first_turn/mi_estimate" in row
                    else ""
                )
            )
        print(f"logs and checkpoint in {config.out_dir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.ppo.cli``: train from the command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m baselines.ppo.cli", description=__doc__.splitlines()[0])
    add_train_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_train(args)
    except ValueError as error:  # user mistakes (a bad value, a checkpoint to convert): one line, no traceback
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
