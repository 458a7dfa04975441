"""``leaderboard``: verify, add, build, rerun submissions; show the suite; make a hidden-split secret.

::

    leaderboard verify my-model.ragen.tar.gz [--secret-file F]   # exit 0 "verified", or 1 and every reason
    leaderboard add my-model.ragen.tar.gz [--store DIR]          # verify, then store under leaderboard/submissions/
                                                                 # (a hidden-split one: leaderboard/hidden-submissions/)
    leaderboard build --out site/                                # LEADERBOARD.md, leaderboard.csv, index.html
    leaderboard rerun <id> --agent hf:/path/to/model             # a maintainer's rerun: marks the row "reproduced"
    leaderboard pack runs/<run-id> --model-name … --org … --contact … --out x.ragen.tar.gz  (= harness submit)
    leaderboard suite [--json] [--hidden --secret-file F]        # the official split
    leaderboard secret --out F                                   # a new hidden-split secret; prints its sha256

Exit codes: 0 success, 1 a submission was rejected, 2 a usage error (the message says what to fix).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from leaderboard.suite import OFFICIAL, load_suite, new_secret, read_secret

STORE_HELP = (
    "where accepted submissions live (default: leaderboard/submissions, or the git-ignored"
    " leaderboard/hidden-submissions for the hidden split)"
)


def add_pack_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``leaderboard pack`` / ``harness submit``."""
    parser.add_argument("run_dir", help="a finished harness run made with --suite official (runs/<run-id>)")
    parser.add_argument("--model-name", required=True, help='display name, e.g. "My 3B"')
    parser.add_argument("--org", required=True, help="organisation (or 'independent')")
    parser.add_argument("--contact", default=None, help="e-mail address or URL (required)")
    parser.add_argument("--parameters", default="unknown", help='parameter count, e.g. "3B"')
    parser.add_argument("--weights", default="closed", help='https:// link to open weights, or "closed" (default)')
    parser.add_argument("--date", default=None, help="ISO date of the evaluation (default: today)")
    parser.add_argument("--notes", default="", help="free text shown with the submission")
    parser.add_argument("--out", required=True, help="the archive to write, ending in .ragen.tar.gz")
    parser.add_argument("--suite", default=None, help="the suite the run used, if not a built-in one (.json)")
    parser.add_argument("--secret-file", default=None, help="for a hidden-split run: the maintainers' season secret")


def run_pack(args: argparse.Namespace) -> int:
    """Pack ``args.run_dir`` into ``args.out`` (shared by ``leaderboard pack`` and ``harness submit``)."""
    from leaderboard.pack import pack_run

    if not args.contact:
        print("error: --contact is required (an e-mail address or a URL)", file=sys.stderr)
        return 2
    try:
        out = pack_run(
            args.run_dir, args.out, model_name=args.model_name, org=args.org, parameters=args.parameters,
            weights=args.weights, contact=args.contact, date=args.date, notes=args.notes,
            suite=load_suite(args.suite) if args.suite else None,
            secret=read_secret(args.secret_file) if args.secret_file else None,
        )  # fmt: skip
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}; check it with: leaderboard verify {out}")
    return 0


def suite_config_from_args(args: argparse.Namespace, **options):
    """The harness ``RunConfig`` of ``harness run <agent> --suite S [--split hidden --secret-file F]``.

    The suite fixes envs, kwargs, seeds and samples, so the options that choose those are refused.
    """
    from leaderboard.records import suite_run_config

    clashes = [flag for flag, value in (("--env", args.env), ("--episodes", args.episodes),
               ("--samples", args.samples), ("--seed-start", args.seed_start or None),
               ("--env-kwargs", getattr(args, "env_kwargs", None)),
               ("--response-format", getattr(args, "response_format", None))) if value]  # fmt: skip
    if clashes:
        raise ValueError(f"--suite fixes envs, kwargs, seeds and samples: drop {', '.join(clashes)}")
    agents = [spec for spec in args.what.split(",") if spec]
    if len(agents) != 1:
        raise ValueError(f"--suite evaluates one agent per run (a submission is one agent), got {args.what!r}")
    from harness.config import PRESETS

    if agents[0] in PRESETS:
        raise ValueError(f"--suite takes an agent spec (e.g. hf:/path/to/model), not the preset {agents[0]!r}")
    secret = read_secret(args.secret_file) if args.secret_file else None
    return suite_run_config(load_suite(args.suite), agents[0], args.split, secret, **options)


def _secret(args: argparse.Namespace) -> bytes | None:
    return read_secret(args.secret_file) if getattr(args, "secret_file", None) else None


def _suite_arg(args: argparse.Namespace):
    return load_suite(args.suite) if getattr(args, "suite", None) else None


def _print_report(report, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps({"ok": report.ok, "problems": report.problems, "summary": report.summary}, indent=2, default=str)
        )
        return
    print(report)
    if report.ok:
        for env_id, numbers in report.summary.get("envs", {}).items():
            rate = numbers.get("success_rate")
            shown = "—" if rate is None else f"{100 * rate:.1f}%"
            print(f"  {env_id}: {numbers.get('episodes', 0)} episodes replayed, success {shown}")


def cmd_verify(args: argparse.Namespace) -> int:
    """``leaderboard verify``: print the verification report of an archive; exit code 0 if it verifies, else 1."""
    from leaderboard.verify import verify

    report = verify(args.archive, secret=_secret(args), suite=_suite_arg(args))
    _print_report(report, args.json)
    return 0 if report.ok else 1


def cmd_add(args: argparse.Namespace) -> int:
    """``leaderboard add``: verify an archive and store it; exit code 0 if stored, 1 if it failed verification."""
    from leaderboard.store import add

    report, folder = add(args.archive, args.store, secret=_secret(args), suite=_suite_arg(args))
    _print_report(report, False)
    if folder is None:
        return 1
    build = build_command(folder.parent, report.summary["split"], args.suite)
    print(f"stored as {folder.name} in {folder.parent}; publish with: {build}")
    return 0


def build_command(store: Path, split: str, suite: str | None = None) -> str:
    """The ``leaderboard build`` line that publishes ``store`` (of ``split``, under ``suite``), as a user types it."""
    from leaderboard.store import default_store

    words = ["leaderboard", "build", "--out", "site/"]
    if split == "hidden":
        words += ["--split", "hidden"]
    if split == "hidden" or Path(store).absolute() != default_store(split).absolute():
        words += ["--store", str(store)]
    if suite:
        words += ["--suite", suite]
    return shlex.join(words)


def cmd_build(args: argparse.Namespace) -> int:
    """``leaderboard build``: write the static site (HTML, Markdown, CSV) from the store; prints each path written."""
    from leaderboard.build import build
    from leaderboard.store import default_store

    store = args.store if args.store is not None else default_store(args.split)
    paths = build(args.out, store, suite=_suite_arg(args) or OFFICIAL, split=args.split)
    for path in paths.values():
        print(f"wrote {path}")
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    """``leaderboard rerun``: rerun a stored submission with an agent; exit code 0 if it reproduced, else 1."""
    from leaderboard.rerun import rerun

    changes = {k: v for k, v in (("device", args.device), ("temperature", args.temperature),
                                 ("max_new_tokens", args.max_new_tokens)) if v is not None}  # fmt: skip
    overrides = {"agent_options": changes} if changes else {}
    result = rerun(args.submission, args.agent, store=args.store, workdir=args.workdir, secret=_secret(args),
                   suite=_suite_arg(args), tolerance=args.tolerance, workers=args.workers, **overrides)  # fmt: skip
    print(result.message)
    return 0 if result.reproduced else 1


def cmd_remove(args: argparse.Namespace) -> int:
    """``leaderboard remove``: delete a submission from the store; exit code 0."""
    from leaderboard.store import remove

    print(f"removed {remove(args.store, args.submission)}")
    return 0


def cmd_suite(args: argparse.Namespace) -> int:
    """``leaderboard suite``: print a suite as JSON, or its hidden seeds with ``--hidden`` (exit code 2 without a secret)."""
    suite = _suite_arg(args) or OFFICIAL
    if args.hidden:
        secret = _secret(args)
        if secret is None:
            print("error: --hidden needs --secret-file", file=sys.stderr)
            return 2
        seeds = {env_id: list(suite.seeds(env_id, "hidden", secret)) for env_id in suite.env_ids}
        print(json.dumps(seeds, indent=2))
        return 0
    if args.json:
        print(json.dumps({**suite.to_dict(), "fingerprint": suite.fingerprint()}, indent=2))
        return 0
    print(f"suite {suite.label} (fingerprint {suite.fingerprint()[:16]}…)")
    for entry in suite.entries:
        seeds = entry.seeds
        print(f"  {entry.env_id} {entry.kwargs or ''}: {len(seeds)} seeds ({seeds[0]}…{seeds[-1]}) "
              f"× {entry.samples_per_seed} samples = {len(seeds) * entry.samples_per_seed} episodes")  # fmt: skip
    if suite.hidden:
        h = suite.hidden
        print(f"  hidden season {h.season}: {h.seeds_per_env} seeds per env, secret sha256 {h.secret_sha256}")
    return 0


def cmd_secret(args: argparse.Namespace) -> int:
    """``leaderboard secret``: write a new season secret (mode 0600) and print its sha256; exit code 2 if the file exists."""
    from leaderboard.store import check_private

    out = Path(args.out)
    if out.exists():
        print(f"error: {out} exists; a secret is never overwritten", file=sys.stderr)
        return 2
    check_private(out, "the season's secret")  # ValueError: one line, exit 2
    secret, digest = new_secret()
    out.touch(mode=0o600)
    out.write_bytes(secret + b"\n")
    print(f"wrote {out} (keep it private); publish this sha256 as the season's secret_sha256:\n{digest}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``leaderboard`` argument parser, one subcommand per ``cmd_*`` function."""
    parser = argparse.ArgumentParser(prog="leaderboard", description=__doc__.split("\n\n")[0].replace("``", ""))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, store: bool = False, suite: bool = True) -> None:
        if suite:
            p.add_argument(
                "--suite", default=None, help="a built-in suite name or a suite .json (default: from metadata)"
            )
            p.add_argument("--secret-file", default=None, help="the maintainer's secret, to check the hidden split")
        if store:
            p.add_argument("--store", default=None, help=STORE_HELP)

    p = sub.add_parser("verify", help="replay a submission; exit 0 if it verifies")
    p.add_argument("archive")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    common(p)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("add", help="verify a submission, then store it")
    p.add_argument("archive")
    common(p, store=True)
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("build", help="write the static site from the stored submissions")
    p.add_argument("--out", default="site", help="output folder (default: site/)")
    p.add_argument("--split", default="official", help="official (default) or hidden")
    p.add_argument("--suite", default=None, help="a built-in suite name or a suite .json (default: official)")
    p.add_argument("--store", default=None, help=STORE_HELP)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("rerun", help="re-run a stored submission's model on its split; marks it reproduced")
    p.add_argument("submission", help="a stored submission id (or a unique prefix)")
    p.add_argument("--agent", required=True, help="the harness agent to run, e.g. hf:/models/my-3b")
    p.add_argument("--workdir", default="runs", help="where the rerun's run folder goes (default: runs/)")
    p.add_argument("--tolerance", type=float, default=3.0, help="allowed success gap, in standard errors (default 3)")
    p.add_argument("--workers", type=int, default=1, help="harness worker processes")
    p.add_argument("--device", default=None, help="agent device (default: the submission's options)")
    p.add_argument("--temperature", type=float, default=None, help="(default: the submission's)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="(default: the submission's)")
    common(p, store=True)
    p.set_defaults(func=cmd_rerun)

    p = sub.add_parser("remove", help="delete a stored submission")
    p.add_argument("submission")
    p.add_argument("--store", default=None, help=STORE_HELP)
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("pack", help="pack a harness run into a submission (same as `harness submit`)")
    add_pack_arguments(p)
    p.set_defaults(func=run_pack)

    p = sub.add_parser("suite", help="show the official split (or the hidden seeds, with the secret)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--hidden", action="store_true", help="print the hidden seeds (needs --secret-file)")
    common(p)
    p.set_defaults(func=cmd_suite)

    p = sub.add_parser("secret", help="write a new hidden-split secret and print its sha256")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_secret)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv``; return the exit code (0 ok, 1 rejected, 2 usage error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return int(exc.code or 0)
    try:
        return args.func(args)
    except (ValueError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2


def entry_point() -> None:
    """Console-script entry: run :func:`main` on ``sys.argv`` and exit with its code."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    entry_point()
