"""``harness``: run agents over the registered envs, report, list what exists.

harness run baseline                                  # random + oracle on every registered env
harness run random --env ragen/Bandit-v0 --episodes 256 --samples 8 --workers 2 --out runs/
harness run hf:/path/to/checkpoint --env ragen/FrozenLake-v0 --temperature 1.0
harness run --resume runs/<run-id>                    # after Ctrl-C, a crash or kill -9
harness run random --env ragen/FrozenLake-v0 --env-kwargs '{"slip": 0.2}' --threads 2
harness run hf:/path/to/checkpoint --response-format tool   # every env's actions as tool calls
harness report runs/<a> runs/<b>                      # side by side
harness ls                                            # envs, agents, metrics, presets
harness run hf:/path/to/checkpoint --suite official   # the leaderboard's evaluation split
harness submit runs/<run-id> --model-name "My 3B" --org Lab --contact me@lab.org --out my.ragen.tar.gz
harness train cpu-tiny --model baselines/tiny/model --env-id ragen/Bandit-v0   # PPO/GRPO + SNR filter
harness mi verl_rollouts/ --model /path/to/checkpoint      # MI + entropy per step of another trainer's dump
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
import textwrap
import typing
from collections.abc import Sequence
from pathlib import Path

from harness.agents.options import AgentOptions
from harness.agents.registry import available_agents
from harness.config import (
    BASELINE_AGENTS,
    BASELINE_CONTEXT_TURNS,
    BASELINE_MAX_NEW_TOKENS,
    PRESETS,
    EnvPlan,
    RunConfig,
    available_plans,
    baseline_plan,
    preset_config,
)
from harness.threads import DEFAULT_WORKERS, threads_argument, workers_argument
from ragen_envs import resolve_env_id
from ragen_envs.parsing import RESPONSE_FORMATS


def _context_turns(text: str) -> int | None:
    if text == "full":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--context must be 'full' or a number of turns, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--context must be >= 0, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse whose mistakes are one ``harness: error: …`` line (exit 2), not a usage block. Flags are spelled
    out (no abbreviations), so a ``--resume`` can tell which flags were given."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"harness: error: {message} (usage: {self.prog} -h)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``harness`` argument parser: ``run``, ``report`` and ``ls``."""
    parser = _Parser(prog="harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="roll agents out and write a run folder")
    run.add_argument(
        "what", nargs="?", help=f"a preset ({', '.join(PRESETS)}) or agent spec(s), comma-separated (not with --resume)"
    )
    run.add_argument("--env", action="append", default=[], help="env id (repeatable or comma-separated); default: all")
    run.add_argument("--episodes", type=int, help="env seeds per env (default 32; the preset's per-env table)")
    run.add_argument("--samples", type=int, help="rollouts per seed, on the same seed (default 4)")
    run.add_argument(
        "--env-kwargs",
        action="append",
        default=[],
        metavar="[ENV=]JSON",
        help="keyword arguments for one env's gym.make, e.g. 'ragen/Sokoban-v0={\"difficulty\": 3}' (repeatable; "
        "without ENV= the run must have one env); recorded in config.json",
    )
    run.add_argument(
        "--response-format", choices=RESPONSE_FORMATS, default=None,
        help="every env's response format: think (the envs' default), answer, raw, or tool (actions as tool calls; "
        "docs/contract.md); added to each env's kwargs, where an env's own --env-kwargs value wins",
    )  # fmt: skip
    run.add_argument("--seed-start", type=int, default=0, help="first env seed (default 0)")
    run.add_argument(
        "--probe", action="store_true",
        help="play each env's fixed MI probe: --episodes seeds whose first prompts share no key feature "
        "(Bandit's arm names, FrozenLake's start and goal), so retrieval is not capped by prompts alike",
    )  # fmt: skip
    run.add_argument("--seed", type=int, default=0, help="run seed for agent sampling (default 0)")
    run.add_argument(
        "--context", type=_context_turns, default=-1, help="'full' or last K turns (default: full; baseline: 2)"
    )
    run.add_argument(
        "--temperature", type=float, default=1.0, help="sampling temperature, >= 0 (default 1.0; 0 greedy)"
    )
    run.add_argument("--max-new-tokens", type=int, default=None, help="per-turn token budget (200; baseline 96)")
    run.add_argument("--device", default="auto", help="LM agents: auto (default), cpu, cuda, cuda:N")
    run.add_argument("--dtype", default="auto", help="LM agents: auto (default), float32, bfloat16, float16")
    run.add_argument(
        "--batch-size", type=int, default=16, help="episodes in lockstep per worker task, >= 1 (default 16)"
    )
    run.add_argument(
        "--agent-opt", action="append", default=[], metavar="KEY=VALUE",
        help="a backend option of the agent (repeatable; <agent>.KEY for one agent of several); harness ls lists them",
    )  # fmt: skip
    run.add_argument("--mi-samples", type=int, default=64, help="pairs per MI scheme, >= 0 (default 64; 0 disables MI)")
    run.add_argument(
        "--mi-columns", type=int, default=None, help="score each reasoning under its own + C-1 random prompts (>= 2)"
    )
    run.add_argument(
        "--workers",
        type=workers_argument,
        default=DEFAULT_WORKERS,
        help="local worker processes, each rolling out and scoring the MI family with its own copy of the agents: N or "
        "'auto' (default: the cores idle at start, at most one per chunk); one thread each, so unlike --threads a "
        "busy box loses little (see harness/threads.py), but each loads its own model",
    )
    run.add_argument(
        "--threads",
        type=threads_argument,
        default=None,
        help="torch CPU threads per LM agent process: N or 'auto' (the cores idle now); default 1, which never "
        "loses badly when other jobs share the cores (see harness/threads.py)",
    )
    run.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS", help="run on Ray")
    run.add_argument("--out", default="runs", help="parent folder of the run folder (default runs/)")
    run.add_argument("--run-id", help="run folder name (default <name>-<UTC time>)")
    run.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run (its config.json decides)")
    run.add_argument("--parquet", action="store_true", help="also write summary.parquet and episodes.parquet")
    run.add_argument("--no-plots", action="store_true", help="skip success.png and mi_entropy.png")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--wide", action="store_true", help="print every table column (default: fit 120 characters)")
    # Leaderboard splits: the suite fixes envs, kwargs, seeds and samples (see leaderboard/suite.py).
    run.add_argument("--suite", help="a leaderboard suite ('official') or suite .json; one agent, no --env/--episodes")
    run.add_argument("--split", default="official", help="with --suite: 'official' (default) or 'hidden'")
    run.add_argument("--secret-file", help="with --split hidden: the maintainers' season secret")

    from leaderboard.cli import add_pack_arguments

    add_pack_arguments(sub.add_parser("submit", help="pack a --suite run into a leaderboard submission"))

    report = sub.add_parser("report", help="summaries of one or more runs, side by side")
    report.add_argument("runs", nargs="+", help="run folders")
    report.add_argument("--out", help="write report.md and plots here")
    report.add_argument("--wide", action="store_true", help="print every table column (default: fit 120 characters)")

    sub.add_parser("ls", help="envs, agents, metrics and presets with one-line descriptions")

    mi = sub.add_parser(
        "mi", help="MI family and entropy per step of another trainer's rollout dump, scored by a checkpoint",
        description="Formats (recognised per line): our episodes.jsonl, TRL completion logs (JSONL/Parquet), verl "
        "rollout dumps (<step>.jsonl), RAGEN-style chat transcripts; see docs/metrics.md.",
    )  # fmt: skip
    mi.add_argument("dump", nargs="+", help="dump files, or folders of .jsonl/.parquet files")
    mi.add_argument("--model", required=True, help="a checkpoint folder, or any agent spec (hf:…, tiny; harness ls)")
    mi.add_argument("--mi-samples", type=int, default=64, help="pairs drawn per step, >= 2 (default 64)")
    mi.add_argument("--mi-columns", type=int, default=None, help="score each reasoning under its own + C-1 prompts")
    mi.add_argument("--seed", type=int, default=0, help="seed of the per-step pair draws (default 0)")
    mi.add_argument("--temperature", type=float, default=1.0, help="the policy's sampling temperature (default 1.0)")
    mi.add_argument("--device", default="auto", help="auto (default), cpu, cuda, cuda:N")
    mi.add_argument("--dtype", default="auto", help="auto (default), float32, bfloat16, float16")
    mi.add_argument("--batch-size", type=int, default=16, help="sequences per scoring forward (default 16)")
    mi.add_argument("--out", help="output folder (default runs/mi-<dump name>-<UTC time>)")
    mi.add_argument("--quiet", action="store_true", help="no progress bar")

    from baselines.ppo.cli import add_train_arguments

    add_train_arguments(sub.add_parser("train", help="PPO/GRPO with SNR-aware filtering (baselines/ppo)"))
    return parser


def env_kwargs_from_args(values: Sequence[str], env_ids: Sequence[str]) -> dict[str, dict]:
    """``--env-kwargs [ENV=]JSON`` values as ``{env_id: kwargs}``; each names an env of the run."""
    import json

    out: dict[str, dict] = {}
    for value in values:
        head, eq, tail = value.partition("=")
        if eq and not head.lstrip().startswith("{"):
            env_id, text = resolve_env_id(head.strip()), tail
        elif len(env_ids) == 1:
            env_id, text = env_ids[0], value
        else:
            raise ValueError(
                f"--env-kwargs {value!r}: this run has {len(env_ids)} envs; name one: --env-kwargs 'ENV={value}'"
            )
        if env_id not in env_ids:
            raise ValueError(f"--env-kwargs names {env_id}, which is not an env of this run (--env)")
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"--env-kwargs for {env_id}: not valid JSON ({exc}): {text!r}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"--env-kwargs for {env_id} must be a JSON object like '{{\"slip\": 0.2}}', got {text!r}")
        out.setdefault(env_id, {}).update(parsed)
    return out


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The :class:`RunConfig` that ``harness run``'s parsed arguments describe (a preset expands to its envs and agents)."""
    options = AgentOptions(
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens
        if args.max_new_tokens is not None
        else (BASELINE_MAX_NEW_TOKENS if args.what in PRESETS else 200),
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
    )
    if args.agent_opt:  # checked against the run's agents now, before any run folder or model exists
        from harness.agents.registry import parse_agent_opts

        specs = list(BASELINE_AGENTS) if args.what in PRESETS else [s for s in args.what.split(",") if s]
        options = dataclasses.replace(options, extra=parse_agent_opts(args.agent_opt, specs))
    common = dict(
        seed=args.seed,
        context_turns=args.context
        if args.context != -1
        else (BASELINE_CONTEXT_TURNS if args.what in PRESETS else None),
        agent_options=options,
        batch_size=args.batch_size,
        mi_samples=args.mi_samples,
        mi_columns=args.mi_columns,
    )
    if args.suite:
        from leaderboard.cli import suite_config_from_args

        return suite_config_from_args(args, **common)
    env_names = [name for chunk in args.env for name in chunk.split(",") if name]
    if args.what in PRESETS:
        config = preset_config(args.what, **common)
        agents, preset = config.agents, args.what
        env_ids = [resolve_env_id(n) for n in env_names] or [p.env_id for p in config.envs]
    else:
        import ragen_envs

        agents = tuple(spec for spec in args.what.split(",") if spec)
        preset = None
        close = difflib.get_close_matches(args.what, list(PRESETS), n=1, cutoff=0.75)
        if close and ":" not in args.what and args.what not in {e.name for e in available_agents()}:
            raise ValueError(f"Unknown preset or agent {args.what!r}. Did you mean {close[0]!r}?")
        env_ids = [resolve_env_id(n) for n in env_names] or ragen_envs.registered_ids()
    env_ids = list(dict.fromkeys(env_ids))
    kwargs = env_kwargs_from_args(args.env_kwargs, env_ids)
    if args.response_format is not None:
        kwargs = {env_id: {"response_format": args.response_format, **kwargs.get(env_id, {})} for env_id in env_ids}
    plans = []
    for env_id in env_ids:
        episodes, samples = baseline_plan(env_id) if preset else (32, 4)
        plans.append(
            EnvPlan(
                env_id,
                args.episodes if args.episodes is not None else episodes,
                args.samples if args.samples is not None else samples,
                args.seed_start,
                kwargs.get(env_id, {}),
                probe=args.probe,
            )
        )
    kept, skipped = available_plans(plans)
    if skipped and env_names:  # asked for by name: an error, not a skip
        env_id, reason = next(iter(skipped.items()))
        raise ValueError(f"{env_id} cannot run on this machine: {reason}")
    for env_id, reason in skipped.items():
        print(f"harness: skipping {env_id}: {reason}", file=sys.stderr)
    return RunConfig(agents=tuple(agents), envs=kept, preset=preset, skipped_envs=skipped, **common)


EXECUTION_FLAGS = ("resume", "workers", "ray", "threads", "quiet", "parquet", "no_plots", "wide")
"""``harness run`` flags that say how to execute, not what: the only ones a ``--resume`` may (re)choose."""


def _given_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> dict[str, str]:
    """dest → the option string of every flag that appears in ``argv`` (exact spellings; abbreviations are off)."""
    options = {opt: action.dest for action in parser._actions for opt in action.option_strings}
    given = {}
    for token in argv:
        flag = token.split("=", 1)[0]
        if flag in options:
            given[options[flag]] = flag
    return given


def check_resume_flags(args: argparse.Namespace, given: dict[str, str], recorded: RunConfig, run_dir: str) -> None:
    """Refuse every flag of a ``--resume`` that contradicts the run's config.json (it decides), naming the flag."""
    options = recorded.agent_options
    plans = recorded.envs
    same: dict[str, tuple[object, object]] = {}  # dest → (given value, recorded value)
    if args.what is not None:
        same["what"] = (args.what, recorded.preset or ",".join(recorded.agents))
    expected = {
        "seed": recorded.seed, "temperature": options.temperature, "max_new_tokens": options.max_new_tokens,
        "device": options.device, "dtype": options.dtype, "batch_size": recorded.batch_size,
        "mi_samples": recorded.mi_samples, "mi_columns": recorded.mi_columns, "context": recorded.context_turns,
    }  # fmt: skip
    for dest, value in expected.items():
        if dest in given:
            same[dest] = (getattr(args, dest), value)
    per_plan = {"episodes": "episodes", "samples": "samples", "seed_start": "seed_start", "probe": "probe"}
    for dest, attr in per_plan.items():
        if dest in given:
            values = sorted({getattr(plan, attr) for plan in plans})
            same[dest] = (getattr(args, dest), values[0] if len(values) == 1 else values)
    if "env" in given:
        wanted = sorted({resolve_env_id(n) for chunk in args.env for n in chunk.split(",") if n})
        same["env"] = (",".join(wanted), ",".join(sorted(plan.env_id for plan in plans)))
    if "response_format" in given:
        formats = sorted({str(plan.kwargs.get("response_format", "the env's default")) for plan in plans})
        same["response_format"] = (args.response_format, formats[0] if len(formats) == 1 else formats)
    if "env_kwargs" in given:
        ids = [plan.env_id for plan in plans]
        asked = env_kwargs_from_args(args.env_kwargs, ids)
        same["env_kwargs"] = (asked, {plan.env_id: plan.kwargs for plan in plans if plan.env_id in asked})
    for dest, (value, recorded_value) in same.items():
        if value != recorded_value:
            flag = given.get(dest, "the agent/preset argument")
            shown = value if dest != "context" else ("full" if value is None else value)
            raise ValueError(
                f"--resume {run_dir}: {flag} {shown} contradicts the run's config.json ({recorded_value}); the "
                f"recorded run decides: drop {flag} (to run something else, start a new run)"
            )
    for dest in ("out", "run_id", "suite", "split", "secret_file"):
        if dest in given:
            raise ValueError(f"--resume {run_dir}: {given[dest]} does not apply (the run folder and config are fixed)")


def cmd_run(args: argparse.Namespace, argv: Sequence[str], given: dict[str, str]) -> int:
    """``harness run``: roll out (or resume) a run, write its folder and print the summary table; exit code 0."""
    from harness.report import format_table
    from harness.runner import load_config, run

    if not args.resume and args.what is None:
        raise ValueError("harness run needs a preset or agent spec (e.g. `harness run baseline`), or --resume RUN_DIR")
    if args.resume:
        check_resume_flags(args, given, load_config(Path(args.resume))[0], args.resume)
        result = run(
            None,
            resume=Path(args.resume),
            workers=args.workers,
            ray_address=args.ray,
            progress=not args.quiet,
            parquet=args.parquet,
            plots=not args.no_plots,
            threads=args.threads,
        )
    else:
        config = config_from_args(args)
        result = run(
            config,
            args.out,
            run_id=args.run_id,
            workers=args.workers,
            ray_address=args.ray,
            progress=not args.quiet,
            parquet=args.parquet,
            plots=not args.no_plots,
            argv=["harness", *argv],
            threads=args.threads,
        )
    print(format_table(result.summary, wide=args.wide))
    print(f"\n{result.new_episodes} new episodes; files in {result.run_dir}/")
    if result.mi_seconds >= 1.0:  # it can be a good part of an LM run: say what it cost and how to cut it
        print(
            f"MI family: {result.mi_seconds:.1f} s (--mi-columns C or a smaller --mi-samples trade precision for time)"
        )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``harness report``: print or write the report of one run, a comparison of several, or learner runs' training curves."""
    from harness.report import compare, format_table, load_summary, write_report
    from harness.training_report import is_learner_run, report_training

    if all(is_learner_run(Path(r)) for r in args.runs):  # learner runs: collapse curves from metrics.jsonl
        print(report_training([Path(r) for r in args.runs], Path(args.out) if args.out else None))
        return 0
    if len(args.runs) == 1 and args.out is None:
        run_dir = Path(args.runs[0])
        summary = load_summary(run_dir)
        write_report(run_dir, summary)
        print(format_table(summary, wide=args.wide))
        print(f"\nreport rewritten: {run_dir / 'report.md'}")
        return 0
    compare([Path(r) for r in args.runs], Path(args.out) if args.out else None)
    return 0


def cmd_mi(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``harness mi``: the MI family, entropy and their plot per step of a rollout dump; exit code 0."""
    import datetime as _dt

    from harness import dump_mi
    from harness.agents.registry import make_agent
    from harness.dumps import read_dump
    from harness.progress import Progress

    if args.mi_columns is not None and args.mi_columns < 2:
        raise ValueError(f"--mi-columns must be >= 2, got {args.mi_columns}")
    samples, form, empty = read_dump(args.dump)
    spec = f"hf:{args.model}" if ":" not in args.model and Path(args.model).is_dir() else args.model
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else Path("runs") / f"mi-{Path(args.dump[0]).stem or 'dump'}-{stamp}"
    steps = len({s.step for s in samples})
    print(f"harness mi: {len(samples)} {form} samples over {steps} step(s) ({empty} lines without a response); "
          f"writing to {out}/", file=sys.stderr, flush=True)  # fmt: skip
    options = AgentOptions(temperature=args.temperature, device=args.device, dtype=args.dtype,
                           batch_size=args.batch_size)  # fmt: skip
    agent = make_agent(spec, options)
    per_step: dict[int, int] = {}
    for sample in samples:
        per_step[sample.step] = per_step.get(sample.step, 0) + (1 if sample.reasoning else 0)
    total = sum(min(n, args.mi_samples) for n in per_step.values())
    try:
        with Progress({"pairs": total}, enabled=not args.quiet, stream=sys.stderr, unit="pairs scored") as bar:
            lines = dump_mi.mi_over_steps(agent, samples, mi_samples=args.mi_samples, mi_columns=args.mi_columns,
                                          seed=args.seed, progress=bar)  # fmt: skip
    finally:
        agent.close()
    header = {"model": spec, "format": form, "dump": [str(d) for d in args.dump], "mi_samples": args.mi_samples,
              "mi_columns": args.mi_columns, "seed": args.seed, "temperature": args.temperature,
              "command": ["harness", *argv]}  # fmt: skip
    names = dump_mi.write_outputs(out, lines, header)
    print(dump_mi.format_steps(lines))
    print(f"\nfiles in {out}/: {', '.join(names)}")
    return 0


def _env_description(env_id: str) -> str:
    from gymnasium.envs.registration import load_env_creator, registry

    try:
        creator = load_env_creator(registry[env_id].entry_point)
        doc = (sys.modules[creator.__module__].__doc__ or creator.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""
    except Exception as exc:  # an env that fails to import must not break the listing
        return f"(cannot import: {type(exc).__name__}: {exc})"


def cmd_ls() -> int:
    """``harness ls``: print the registered envs, agents and metrics with one line each; exit code 0."""
    import ragen_envs
    from harness.metrics import registry

    print("envs:")
    for env_id in ragen_envs.registered_ids():
        print(f"  {env_id:28} {_env_description(env_id)}")
    print("\nagents:")
    for entry in available_agents():
        print(f"  {entry.display:28} {entry.description}")
        for option in entry.options:  # --agent-opt KEY=VALUE
            print(f"    {option.display:40} {option.help}")
    print("\npresets (harness run NAME):")
    for name, text in PRESETS.items():
        print(f"  {name:28} {text}")
    from baselines.ppo.cli import preset_summary
    from baselines.ppo.config import PRESETS as TRAIN_PRESETS

    print("\ntrain presets (harness train NAME --model DIR; any field as a flag, harness train -h):")
    for name in TRAIN_PRESETS:
        print(textwrap.fill(preset_summary(name), 118, initial_indent=f"  {name:28} ", subsequent_indent=" " * 31))
    print("\nmetrics (MI family per scheme: first_turn/<name>, trajectory/<name>):")
    for name, metric in registry().items():
        arrow = {True: "↑", False: "↓", None: " "}[metric.higher_is_better]
        print(f"  {name:28} {arrow} {metric.description}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. User mistakes print one line and return 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            run_parser = parser._subparsers._group_actions[0].choices["run"]
            return cmd_run(args, argv, _given_flags(run_parser, argv[1:]))
        if args.command == "report":
            return cmd_report(args)
        if args.command == "submit":
            from leaderboard.cli import run_pack

            return run_pack(args)
        if args.command == "train":
            from baselines.ppo.cli import run_train

            return run_train(args)
        if args.command == "mi":
            return cmd_mi(args, argv)
        return cmd_ls()
    except KeyboardInterrupt as exc:  # Ctrl-C; harness.runner.RunInterrupted names the run folder
        run_dir = getattr(exc, "run_dir", None)
        if args.command == "train":
            return _error("interrupted; the same `harness train` command resumes from the last checkpoint")
        if run_dir is None:
            return _error("interrupted before anything was written")
        return _error(f"interrupted; the finished episodes are kept: resume with `harness run --resume {run_dir}`")
    except _user_errors() as exc:  # user mistakes: bad names, paths, endpoints, devices, missing extras
        return _error(str(exc))


def _user_errors() -> tuple[type[BaseException], ...]:
    from harness.agents.openai_api import EndpointError
    from ragen_envs.sandbox import SandboxUnavailable

    return (ValueError, OSError, ImportError, EndpointError, SandboxUnavailable)


def _error(message: str) -> int:
    """One ``harness: error: …`` line on stderr (a multi-line message is joined), exit status 2."""
    print("harness: error: " + " ".join(message.split()), file=sys.stderr)
    return 2


def entry_point() -> None:
    """The ``harness`` console script."""
    raise SystemExit(main())


if __name__ == "__main__":
    entry_point()
