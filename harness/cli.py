"""``harness``: run agents over the registered envs, report, list what exists.

harness run baseline                                  # random + oracle on every registered env
harness run random --env ragen/Bandit-v0 --episodes 256 --samples 8 --workers 2 --out runs/
harness run hf:/path/to/checkpoint --env ragen/FrozenLake-v0 --temperature 1.0
harness run baseline --resume runs/<run-id>           # after a crash or kill -9
harness report runs/<a> runs/<b>                      # side by side
harness ls                                            # envs, agents, metrics, presets
harness run hf:/path/to/checkpoint --suite official   # the leaderboard's evaluation split
harness submit runs/<run-id> --model-name "My 3B" --org Lab --contact me@lab.org --out my.ragen.tar.gz
harness train cpu-tiny --model baselines/tiny/model --env-id ragen/Bandit-v0   # PPO/GRPO + SNR filter
"""

from __future__ import annotations

import argparse
import difflib
import sys
import typing
from collections.abc import Sequence
from pathlib import Path

from harness.agents.registry import AgentOptions, available_agents
from harness.threads import threads_argument
from harness.config import (
    BASELINE_CONTEXT_TURNS,
    BASELINE_MAX_NEW_TOKENS,
    PRESETS,
    EnvPlan,
    RunConfig,
    available_plans,
    baseline_plan,
    preset_config,
    resolve_env_id,
)


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
    """argparse whose mistakes are one ``harness: error: …`` line (exit 2), not a usage block."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"harness: error: {message} (usage: {self.prog} -h)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="roll agents out and write a run folder")
    run.add_argument("what", help=f"a preset ({', '.join(PRESETS)}) or agent spec(s), comma-separated")
    run.add_argument("--env", action="append", default=[], help="env id (repeatable or comma-separated); default: all")
    run.add_argument("--episodes", type=int, help="env seeds per env (default 32; the preset's per-env table)")
    run.add_argument("--samples", type=int, help="rollouts per seed, on the same seed (default 4)")
    run.add_argument("--seed-start", type=int, default=0, help="first env seed (default 0)")
    run.add_argument("--seed", type=int, default=0, help="run seed for agent sampling (default 0)")
    run.add_argument(
        "--context", type=_context_turns, default=-1, help="'full' or last K turns (default: full; baseline: 2)"
    )
    run.add_argument("--temperature", type=float, default=1.0)
    run.add_argument("--max-new-tokens", type=int, default=None, help="per-turn token budget (200; baseline 96)")
    run.add_argument("--device", default="auto")
    run.add_argument("--dtype", default="auto")
    run.add_argument("--batch-size", type=int, default=16, help="episodes in lockstep per worker task")
    run.add_argument("--mi-samples", type=int, default=64, help="pairs per MI scheme; 0 disables MI")
    run.add_argument(
        "--mi-columns", type=int, default=None, help="score each reasoning under its own + C-1 random prompts (>= 2)"
    )
    run.add_argument("--workers", type=int, default=1, help="local worker processes")
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
    run.add_argument("--no-plots", action="store_true")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    # Leaderboard splits: the suite fixes envs, kwargs, seeds and samples (see leaderboard/suite.py).
    run.add_argument("--suite", help="a leaderboard suite ('official') or suite .json; one agent, no --env/--episodes")
    run.add_argument("--split", default="official", help="with --suite: 'official' (default) or 'hidden'")
    run.add_argument("--secret-file", help="with --split hidden: the maintainers' season secret")

    from leaderboard.cli import add_pack_arguments

    add_pack_arguments(sub.add_parser("submit", help="pack a --suite run into a leaderboard submission"))

    report = sub.add_parser("report", help="summaries of one or more runs, side by side")
    report.add_argument("runs", nargs="+", help="run folders")
    report.add_argument("--out", help="write report.md and plots here")

    sub.add_parser("ls", help="envs, agents, metrics and presets with one-line descriptions")

    from baselines.ppo.cli import add_train_arguments

    add_train_arguments(sub.add_parser("train", help="PPO/GRPO with SNR-aware filtering (baselines/ppo)"))
    return parser


def config_from_args(args: argparse.Namespace) -> RunConfig:
    options = AgentOptions(
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens
        if args.max_new_tokens is not None
        else (BASELINE_MAX_NEW_TOKENS if args.what in PRESETS else 200),
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
    )
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
    plans = []
    for env_id in dict.fromkeys(env_ids):
        episodes, samples = baseline_plan(env_id) if preset else (32, 4)
        plans.append(
            EnvPlan(
                env_id,
                args.episodes if args.episodes is not None else episodes,
                args.samples if args.samples is not None else samples,
                args.seed_start,
            )
        )
    kept, skipped = available_plans(plans)
    if skipped and env_names:  # asked for by name: an error, not a skip
        env_id, reason = next(iter(skipped.items()))
        raise ValueError(f"{env_id} cannot run on this machine: {reason}")
    for env_id, reason in skipped.items():
        print(f"harness: skipping {env_id}: {reason}", file=sys.stderr)
    return RunConfig(agents=tuple(agents), envs=kept, preset=preset, skipped_envs=skipped, **common)


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from harness.report import format_table
    from harness.runner import run

    if args.resume:
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
    print(format_table(result.summary))
    print(f"\n{result.new_episodes} new episodes; files in {result.run_dir}/")
    if result.mi_seconds >= 1.0:  # it can be a good part of an LM run: say what it cost and how to cut it
        print(
            f"MI family: {result.mi_seconds:.1f} s (--mi-columns C or a smaller --mi-samples trade precision for time)"
        )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report import compare, format_table, load_summary, write_report

    if len(args.runs) == 1 and args.out is None:
        run_dir = Path(args.runs[0])
        summary = load_summary(run_dir)
        write_report(run_dir, summary)
        print(format_table(summary))
        print(f"\nreport rewritten: {run_dir / 'report.md'}")
        return 0
    compare([Path(r) for r in args.runs], Path(args.out) if args.out else None)
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
    import ragen_envs
    from harness.metrics import METRICS

    print("envs:")
    for env_id in ragen_envs.registered_ids():
        print(f"  {env_id:28} {_env_description(env_id)}")
    print("\nagents:")
    for entry in available_agents():
        print(f"  {entry.display:28} {entry.description}")
    print("\npresets:")
    for name, text in PRESETS.items():
        print(f"  {name:28} {text}")
    print("\nmetrics (MI family per scheme: first_turn/<name>, trajectory/<name>):")
    for name, (text, higher) in METRICS.items():
        arrow = {True: "↑", False: "↓", None: " "}[higher]
        print(f"  {name:28} {arrow} {text}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. User mistakes print one line and return 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args, argv)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "submit":
            from leaderboard.cli import run_pack

            return run_pack(args)
        if args.command == "train":
            from baselines.ppo.cli import run_train

            return run_train(args)
        return cmd_ls()
    except (ValueError, OSError, ImportError) as exc:  # user mistakes: bad names, paths, missing extras
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2


def entry_point() -> None:
    """The ``harness`` console script."""
    raise SystemExit(main())


if __name__ == "__main__":
    entry_point()
