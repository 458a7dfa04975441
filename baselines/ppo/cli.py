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
import inspect
import json
import re
import sys
import typing
from pathlib import Path

from baselines.algos.rollout import RolloutSpec
from baselines.algos.sections import SECTIONS, flatten
from baselines.ppo.config import PRESETS, PPOConfig


def class_field_docs(cls: type) -> dict[str, str]:
    """Field name → the docstring under it in ``cls``'s source (parsed, so help text is never duplicated)."""
    tree = ast.parse(inspect.getsource(sys.modules[cls.__module__]))
    docs: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            body = node.body
            for a, b in zip(body, body[1:], strict=False):  # each statement with the next: one pair fewer
                if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant):
                    docs[a.target.id] = str(b.value.value)
    return docs


def flag_fields() -> list[tuple[str, dataclasses.Field, str, typing.Any]]:
    """(flag name, field, docstring, type) of every flag: each ``PPOConfig`` field (its base ``RolloutSpec``'s
    included), a section's fields as ``<section>_<field>``."""
    docs = {**class_field_docs(RolloutSpec), **class_field_docs(PPOConfig)}
    hints = typing.get_type_hints(PPOConfig)
    out = []
    for f in dataclasses.fields(PPOConfig):
        if f.name not in SECTIONS:
            out.append((f.name, f, docs.get(f.name, ""), hints[f.name]))
            continue
        kind = SECTIONS[f.name]
        section_docs, section_hints = class_field_docs(kind), typing.get_type_hints(kind)
        default = f.default_factory()  # the learner's defaults of the section
        for inner in dataclasses.fields(kind):
            shown = dataclasses.field(default=getattr(default, inner.name))
            shown.name = inner.name
            out.append((f"{f.name}_{inner.name}", shown, section_docs.get(inner.name, ""), section_hints[inner.name]))
    return out


def _parser_for(annotation: typing.Any):
    if annotation in (int, float, str):
        return annotation
    text = str(annotation)
    if "dict" in text:
        return json.loads
    if "int" in text and "None" in text:
        return lambda v: None if v.lower() == "none" else int(v)
    return str


def allowed_values(name: str, annotation: typing.Any) -> str | None:
    """What ``PPOConfig`` accepts for field ``name`` ("in [0, inf]", "one of ('gae', …)"), read from the error its
    validator raises for an out-of-range value: the ranges are written once, in ``__post_init__``."""
    text = str(annotation)
    if annotation is str:
        probes: tuple = ("\x00",)
    elif "int" in text:
        probes = (-(10**18), 10**18)
    elif "float" in text:
        probes = (-1e300, 1e300)
    else:
        return None
    for probe in probes:
        try:
            PPOConfig(**{"model": "model", name: probe})
        except (ValueError, TypeError) as error:
            found = re.search(rf"^{re.escape(name)} must be (in \[[^\]]*\]|one of \([^)]*\))", str(error))
            if found:
                return found.group(1)
    return None


def field_help(name: str, f: dataclasses.Field, doc: str, annotation: typing.Any) -> str:
    """A flag's help: the field's docstring, its default and what it accepts (``%`` escaped for argparse)."""
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    allowed = allowed_values(name, annotation)
    text = f"{doc} (default: {default!r}{'; ' + allowed if allowed else ''})"
    return text.replace("%", "%%")


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the learner's arguments to ``parser``: a preset or config file, ``--fresh``, a flag per config field,
    each flag's help with its default and allowed values."""
    presets = "; ".join(f"{name}: {preset_summary(name)}" for name in PRESETS)
    parser.add_argument("base", nargs="?", help=f"a preset ({presets}) or a config .json file".replace("%", "%%"))
    parser.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint in --out-dir")
    for name, f, doc, annotation in flag_fields():
        flag = "--" + name.replace("_", "-")
        text = field_help(name, f, doc, annotation)
        if annotation is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            parser.add_argument(flag, dest=name, type=_parser_for(annotation), default=None, help=text)


def preset_summary(name: str) -> str:
    """One line on a train preset: its iterations, batch and the fields it sets."""
    values = PRESETS[name]
    rest = ", ".join(f"{k}={v}" for k, v in values.items()
                     if k not in ("iterations", "prompts_per_iteration", "samples_per_prompt"))  # fmt: skip
    return (
        f"{values.get('iterations', PPOConfig.iterations)} iterations of {values.get('prompts_per_iteration', 8)} "
        f"prompts x {values.get('samples_per_prompt', 8)} samples; {rest}"
    )


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
    for name, *_ in flag_fields():
        value = getattr(args, name, None)
        if value is not None:
            values[name] = value
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
    try:  # a config.json written before the options had sections is compared field by field all the same
        recorded = json.loads(PPOConfig.from_dict(recorded).to_json())
    except (ValueError, TypeError):
        pass
    recorded, current = flatten(recorded), flatten(json.loads(config.to_json()))
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
    main = trainer.dist.main
    if main:
        print(f"harness train: {config.out_dir}/ (metrics.jsonl gets a line per iteration)", flush=True)
    try:
        rows = trainer.train(resume=not args.fresh, on_row=print_row if main else None)
    finally:
        trainer.close()
    if main:
        if not rows:  # a finished run, asked again: say so instead of printing nothing
            print(f"already done: {config.out_dir} holds all {config.iterations} iterations; pass --iterations N (more) "
                  "to continue it, or --fresh to start over")  # fmt: skip
        print(f"logs and checkpoint in {config.out_dir}")
    return 0


def print_row(row: dict) -> None:
    """One iteration's line on stdout, flushed (a pipe or a log file sees it now)."""
    from harness.training_log import BATCH, ITERATION, RETURN, SUCCESS, mi_key

    mi = row.get(mi_key(BATCH, "first_turn", "mi_estimate"))
    print(
        f"iter {row[ITERATION]:4d}  success {row[SUCCESS]:.3f}  return {row[RETURN]:+.3f}"
        f"  kept {row['rollout/filter_kept_ratio']:.2f}" + (f"  mi {mi:+.3f}" if mi is not None else ""),
        flush=True,
    )


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
