"""Verification: unpack a submission safely, check it is complete and untampered, and replay every episode.

Replay re-creates each env at the recorded id and kwargs, resets it with the recorded seed and feeds the
recorded responses turn by turn; every observation, reward, ``terminated``/``truncated`` flag and
``success`` must equal the record exactly (strings byte for byte, floats bit for bit), and the episode
must end exactly where the record ends. Our envs are deterministic given the seed, so an honest record
always replays; an edited one does not.

Around the replay: the archive is well-formed and safe (:mod:`leaderboard.pack`), the manifest hashes
match, the metadata is complete, the suite is a known one (and its env versions are the registered ones),
the episodes are exactly the split's (env, seed, sample) triples — none missing, extra or duplicated —
and the run's summary equals the one recomputed from the replayed episodes. Collapse metrics (MI,
entropy) need the model, so they are carried as *self-reported*.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaderboard.pack import ArchiveError, Limits, read_archive
from leaderboard.records import (
    ParsedEpisode,
    RecordError,
    iter_episode_lines,
    known_fields,
    max_line_bytes,
    parse_episode,
    run_identity,
)
from leaderboard.schema import METADATA, SubmissionMetadata, check_manifest, self_reported_problem
from leaderboard.suite import Episode, Suite, env_version, find_suite
from leaderboard.summary import SITE_COLLAPSE, compare_summaries, recompute_rows, self_reported_metrics, site_numbers

MAX_LISTED = 200
"""Problems of one kind beyond this many are counted, not listed (a 10,000-episode forgery stays readable)."""


@dataclass
class Report:
    """The outcome of :func:`verify`: ``ok`` exactly when ``problems`` is empty."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.ok:
            return "verified"
        return "rejected:\n" + "\n".join(f"  - {problem}" for problem in self.problems)


class _Problems(list):
    """A list of problem strings that caps how many of one kind it keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def add(self, kind: str, message: str) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= MAX_LISTED:
            self.append(message)

    def close(self) -> list[str]:
        out = list(self)
        for kind, count in sorted(self.counts.items()):
            if count > MAX_LISTED:
                out.append(f"… and {count - MAX_LISTED} more problem(s) of kind {kind!r}")
        return out


def _load_json(members: dict[str, bytes], name: str, problems: _Problems) -> Any:
    try:
        return json.loads(members[name])
    except KeyError:
        problems.add("format", f"archive has no {name}")
    except (ValueError, RecursionError) as exc:
        problems.add("format", f"{name} is malformed JSON: {exc}")
    return None


class Replayer:
    """Replays episode records exactly as the harness rolled them out; one env per (id, kwargs), reused.

    ``context_turns`` is the run's prompt window (config.json). Each turn is replayed into the record the harness
    would write (:func:`harness.episode.turn_record`, the harness's own) and compared with the recorded one
    field by field. A record stores each turn's new user message: it must be the one the harness builds from
    the replayed observation and reward, and the record's window must be the run's; the rest of the chat is the
    instructions and the recorded responses, checked by the replay itself.
    """

    def __init__(self, context_turns: int | None = None) -> None:
        from harness.episode import turn_record
        from harness.records import jsonable
        from harness.transcript import Transcript

        self._envs: dict[str, Any] = {}
        self.context_turns = context_turns
        self._jsonable, self._transcript, self._turn_record = jsonable, Transcript, turn_record

    def _env(self, env_id: str, kwargs: dict[str, Any]) -> Any:
        key = env_id + json.dumps(kwargs, sort_keys=True)
        env = self._envs.get(key)
        if env is None:
            import gymnasium as gym

            import ragen_envs  # noqa: F401  (registers the ids)

            env = gym.make(env_id, **kwargs)
            if env.spec is not None and env.spec.max_episode_steps is None:
                # Without a TimeLimit the wrappers (order enforcing, passive checker) never change an
                # episode, and the bare env is measurably faster per step.
                env = env.unwrapped
            self._envs[key] = env
        return env

    def replay(self, record: ParsedEpisode) -> str | None:
        """None when ``record`` replays exactly, else the first difference, naming the episode and turn."""
        name, raw = record.name, record.raw
        try:
            env = self._env(record.env_id, record.env_kwargs)
        except Exception as exc:  # an unknown id or bad kwargs in a hostile record must not crash verify
            return f"{name}: cannot create the env ({type(exc).__name__}: {exc})"
        observation, info = env.reset(seed=record.seed)
        if raw["instructions"] != info["instructions"]:
            return f"{name}: the recorded instructions differ from the env's"
        if observation != raw["initial_observation"]:
            return f"{name}: the initial observation differs from the env's for this seed"
        if "reset_info" in raw:
            reset_info = {k: v for k, v in info.items() if k != "instructions"}
            if reset_info != raw["reset_info"] and self._jsonable(reset_info) != raw["reset_info"]:
                return f"{name}: the recorded reset info differs from the env's"
        if "context_turns" in raw and raw["context_turns"] != self.context_turns:
            return f"{name}: recorded context window {raw['context_turns']!r}, the run's is {self.context_turns!r}"
        response_format = env.unwrapped.response_format
        transcript = self._transcript(info["instructions"], observation, response_format, self.context_turns)
        done, rewards = False, []
        for index, turn in enumerate(raw["turns"], start=1):
            if done:
                return f"{name} turn {index}: recorded after the episode ended at turn {index - 1}"
            response = turn["response"]
            replayed = self._turn_record(transcript, response, env.step(response))
            mismatch = self._difference(turn, replayed)
            if mismatch:
                return f"{name} turn {index}: {mismatch}"
            info = replayed["info"]
            rewards.append(replayed["reward"])
            done = replayed["terminated"] or replayed["truncated"]
            if not done:
                transcript.advance(response, replayed["observation"], replayed["reward"])
        if not done:
            return f"{name}: the record ends after {len(raw['turns'])} turn(s) but the episode had not ended"
        final = bool(info.get("success", False))
        if raw["success"] != final:
            return f"{name}: recorded final success={raw['success']}, replay gives {final}"
        if raw["return"] != float(sum(rewards)):
            return f"{name}: recorded return {raw['return']!r}, the replayed rewards sum to {float(sum(rewards))!r}"
        if raw.get("num_turns", len(rewards)) != len(rewards):
            return f"{name}: recorded num_turns {raw.get('num_turns')!r}, replay has {len(rewards)}"
        return None

    def _difference(self, recorded: dict[str, Any], replayed: dict[str, Any]) -> str | None:
        """How a recorded turn differs from its replay (the first field that does, in the order a reader checks
        them), or None."""
        if recorded["turn"] != replayed["turn"]:
            return f"numbered {recorded['turn']!r}"
        if recorded["user"] != replayed["user"]:
            return "the recorded user message differs from the one the harness builds from the replay"
        prefill = replayed["prefill"]
        if recorded["prefill"] != prefill or not recorded["response"].startswith(prefill):
            return f"the response does not start with the prefill {prefill!r}"
        if recorded["reasoning"] != replayed["reasoning"]:
            return "the recorded reasoning is not the response's"
        if recorded["observation"] != replayed["observation"]:
            return "the observation differs from the replay"
        reward, mine = recorded["reward"], replayed["reward"]
        if mine != reward or math.copysign(1.0, mine) != math.copysign(1.0, reward):  # -0.0 is not 0.0
            return f"recorded reward {reward!r}, replay gives {mine!r}"
        if (recorded["terminated"], recorded["truncated"]) != (replayed["terminated"], replayed["truncated"]):
            return (
                f"recorded terminated={recorded['terminated']} truncated={recorded['truncated']}, "
                f"replay gives terminated={replayed['terminated']} truncated={replayed['truncated']}"
            )
        info = replayed["info"]
        if info != recorded["info"] and (info := self._jsonable(info)) != recorded["info"]:
            keys = sorted(k for k in set(info) | set(recorded["info"]) if info.get(k) != recorded["info"].get(k))
            return f"info differs from the replay in {', '.join(map(repr, keys[:5]))}"
        return None

    def max_turns(self, env_id: str, kwargs: dict[str, Any]) -> int:
        """The turn limit of ``env_id`` made with ``kwargs`` (the env is kept for the replay)."""
        return int(self._env(env_id, kwargs).unwrapped.max_turns)

    def close(self) -> None:
        """Close every env the replayer opened."""
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def check_self_reported(summary_doc: Any) -> list[str]:
    """Problems with the collapse metrics summary.json reports (the ones the site shows unverified): each must be
    null or a finite number within :data:`~leaderboard.schema.SELF_REPORTED_BOUNDS`."""
    problems = []
    rows = summary_doc.get("rows") if isinstance(summary_doc, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("metrics"), dict):
            continue
        for site_name, key in SITE_COLLAPSE.items():
            metric = row["metrics"].get(key)
            if metric is None:
                continue
            value = metric.get("value") if isinstance(metric, dict) else metric
            problem = self_reported_problem(site_name, value)
            if problem:
                where = f"{row.get('agent')!s:.40} on {row.get('env_id')!s:.60}"
                problems.append(f"summary.json: self-reported {key} of {where} {problem}")
    return problems


def check_env_versions(suite: Suite, registered: Iterable[str]) -> list[str]:
    """Problems when a suite env is not registered here, or a newer version of it is."""
    registered = set(registered)
    latest: dict[str, int] = {}
    for env_id in registered:
        try:
            base, version = env_id.rsplit("-v", 1)[0], env_version(env_id)
        except ValueError:
            continue
        latest[base] = max(latest.get(base, -1), version)
    problems = []
    for env_id in suite.env_ids:
        base = env_id.rsplit("-v", 1)[0]
        if env_id not in registered:
            problems.append(f"suite {suite.label} needs {env_id}, which this ragen-envs does not register")
        elif latest.get(base, -1) > env_version(env_id):
            problems.append(
                f"suite {suite.label} uses {env_id} but {base}-v{latest[base]} is the current version: "
                "the suite needs a new version"
            )
    return problems


def check_recorded_versions(config: dict[str, Any]) -> list[str]:
    """Problems when config.json's recorded env versions (``envs.<id>.version``) are not the registered ones."""
    from gymnasium.envs.registration import registry

    recorded = config.get("envs")
    if not isinstance(recorded, dict):
        return ["config.json has no 'envs' table of env versions"]
    problems = []
    for env_id, entry in recorded.items():
        spec = registry.get(env_id)
        version = entry.get("version") if isinstance(entry, dict) else None
        if spec is None:
            problems.append(f"config.json records env {env_id!r}, which is not registered")
        elif version != f"v{spec.version}":
            problems.append(
                f"config.json records {env_id} at version {version!r}; the registered one is v{spec.version}"
            )
    return problems


def _max_turns(replayer: Replayer, suite: Suite) -> list[int]:
    """The turn limit of each of the suite's envs that can be made (the records of one that cannot are reported as
    such by the replay)."""
    turns = []
    for entry in suite.entries:
        try:
            turns.append(replayer.max_turns(entry.env_id, dict(entry.kwargs)))
        except Exception:  # noqa: BLE001  (an unknown id or bad kwargs must not crash verify)
            continue
    return turns


def verify(
    source: str | Path | bytes,
    *,
    secret: bytes | None = None,
    suite: Suite | None = None,
    limits: Limits | None = None,
) -> Report:
    """Verify a submission (its file's path, or the bytes read once by :func:`leaderboard.pack.read_submission`);
    see the module docstring for every check.

    ``suite`` overrides the lookup of the built-in suite the metadata names (its fingerprint must still
    match); ``secret`` is the maintainer's secret, needed for a hidden-split submission.
    """
    try:
        members = read_archive(source, limits)
    except ArchiveError as exc:
        return Report(ok=False, problems=[str(exc)])
    return verify_members(members, secret=secret, suite=suite)


def verify_members(members: dict[str, bytes], *, secret: bytes | None = None, suite: Suite | None = None) -> Report:
    """:func:`verify` on the members :func:`leaderboard.pack.read_archive` read, in three phases: which run and split
    this is (:func:`_identify_run`), its episodes replayed (:func:`_replay_episodes`), and its summary recomputed from
    the replayed ones (:func:`_check_summary`)."""
    problems = _Problems()
    run = _identify_run(members, problems, secret=secret, suite=suite)
    if run is None:
        return Report(ok=False, problems=problems.close())
    replayed = _replay_episodes(members, run, problems)
    return _check_summary(members, run, replayed, problems)


@dataclass
class _Run:
    """What the first phase establishes about a submission: the documents it carries and the split it must be."""

    metadata: SubmissionMetadata
    config: dict[str, Any]
    summary_doc: Any
    suite: Suite
    identity: dict[str, Any]
    secret: bytes | None

    @property
    def split(self) -> str:
        return self.identity["split"]


@dataclass
class _Replayed:
    """What the second phase leaves: how often each (env, seed, sample) was recorded, and the records that
    replayed (only their known fields)."""

    seen: Counter[Episode]
    verified: list[ParsedEpisode]


def _identify_run(
    members: dict[str, bytes], problems: _Problems, *, secret: bytes | None = None, suite: Suite | None = None
) -> _Run | None:
    """Phase 1, which split this must be: the manifest, the metadata, the suite it names and the run's identity
    in config.json, and the env versions. None when verification cannot go on (the reasons are in ``problems``)."""
    for problem in check_manifest(members):
        problems.add("manifest", problem)
    raw_meta = _load_json(members, METADATA, problems)
    metadata = None
    if raw_meta is not None:
        try:
            metadata = SubmissionMetadata.from_dict(raw_meta)
        except (ValueError, TypeError) as exc:
            problems.add("metadata", f"{METADATA}: {exc}")
    config = _load_json(members, "config.json", problems)
    summary_doc = _load_json(members, "summary.json", problems)
    if metadata is None or config is None:
        return None
    if metadata.split == "hidden" and secret is None:
        problems.add(
            "split", "this is a hidden-split submission: verifying it needs the maintainer's secret (--secret-file)"
        )
        return None
    if suite is None:
        suite = find_suite(metadata.suite, metadata.suite_version)
        if suite is None:
            problems.add("suite", f"unknown suite {metadata.suite}-{metadata.suite_version}: not a leaderboard suite")
            return None
    try:
        if secret is not None and suite.hidden is not None:
            suite.hidden.check_secret(secret)
        identity = run_identity(config, suite, secret)
    except ValueError as exc:
        problems.add("config", f"config.json: {exc}")
        return None
    for key, value in identity.items():
        if getattr(metadata, key) != value:
            problems.add(
                "metadata", f"{METADATA}: {key} is {getattr(metadata, key)!r}, the run's config.json says {value!r}"
            )
    import ragen_envs

    for problem in check_env_versions(suite, ragen_envs.registered_ids()):
        problems.add("version", problem)
    for problem in check_recorded_versions(config):
        problems.add("version", problem)
    return _Run(metadata, config, summary_doc, suite, identity, secret)


def _replay_episodes(members: dict[str, bytes], run: _Run, problems: _Problems) -> _Replayed:
    """Phase 2, the episodes: one line at a time, bounded before it is parsed, matched against the split, replayed.

    Only records that replay are kept, and only their known fields: what stays in memory is what the envs
    produced, whatever a line carries.
    """
    suite, split, identity = run.suite, run.split, run.identity
    expected = list(suite.episodes(split, run.secret))
    expected_set = Counter(expected)
    seen: Counter[Episode] = Counter()
    verified: list[ParsedEpisode] = []
    replayer = Replayer(run.config["run"].get("context_turns"))
    try:
        line_cap = max_line_bytes(max(_max_turns(replayer, suite), default=1))
        for number, obj, error in iter_episode_lines(members.get("episodes.jsonl", b""), line_cap):
            if error:
                problems.add("json", error)
                continue
            try:
                record = parse_episode(number, obj)
            except RecordError as exc:
                problems.add("record", str(exc))
                continue
            key = Episode(record.env_id, record.seed, record.sample)
            seen[key] += 1
            if key not in expected_set:
                if record.env_id not in suite.env_ids:
                    base = record.env_id.rsplit("-v", 1)[0]
                    same = [e for e in suite.env_ids if e.rsplit("-v", 1)[0] == base]
                    why = f"wrong env version (suite has {same[0]})" if same else "env not in the suite"
                    problems.add("extra", f"{record.name}: {why}")
                else:
                    problems.add("extra", f"{record.name}: not in the {split} split of {suite.label}")
                continue
            if seen[key] > 1:
                problems.add("duplicate", f"{record.name}: duplicated (episode already recorded)")
                continue
            if record.raw["agent"] != identity["agent"]:
                problems.add(
                    "agent", f"{record.name}: agent {record.raw['agent']!r}, the run's is {identity['agent']!r}"
                )
                continue
            entry_kwargs = suite.entry(record.env_id).kwargs
            if record.env_kwargs != entry_kwargs:
                problems.add(
                    "kwargs", f"{record.name}: env kwargs {record.env_kwargs} differ from the suite's {entry_kwargs}"
                )
                continue
            try:
                mismatch = replayer.replay(record)
            except Exception as exc:  # the env contract says step() never raises; verify must not either
                mismatch = f"{record.name}: replay raised {type(exc).__name__}: {exc}"
            if mismatch:
                problems.add("replay", mismatch)
            else:
                verified.append(known_fields(record))
    finally:
        replayer.close()
    for key in expected:
        if seen[key] == 0:
            problems.add("missing", f"episode {key}: missing from episodes.jsonl")
    return _Replayed(seen, verified)


def _check_summary(members: dict[str, bytes], run: _Run, replayed: _Replayed, problems: _Problems) -> Report:
    """Phase 3, the summary: recomputed from the episodes that replayed, compared with summary.json, and the
    :class:`Report` of all three phases."""
    import ragen_envs

    try:
        recomputed = recompute_rows(replayed.verified, run.suite)
        numbers = site_numbers(recomputed)
    except Exception as exc:  # a metric that cannot take these episodes must not crash verify
        problems.add("summary", f"the summary cannot be recomputed from these episodes ({type(exc).__name__}: {exc})")
        return Report(ok=False, problems=problems.close())
    if run.summary_doc is not None:
        for problem in compare_summaries(run.summary_doc, recomputed, run.identity["agent"]):
            problems.add("summary", problem)
        for problem in check_self_reported(run.summary_doc):
            problems.add("summary", problem)
    report_summary = {
        "metadata": run.metadata.to_dict(),
        "suite": run.suite.label,
        "split": run.split,
        "episodes": sum(replayed.seen.values()),
        "envs": numbers["envs"],
        "overall": numbers["overall"],
        "self_reported": self_reported_metrics(run.summary_doc),
        "has_report": "report.md" in members,
        "verifier": {"package_version": ragen_envs.__version__, "registered": sorted(run.suite.env_ids)},
    }
    final = problems.close()
    return Report(ok=not final, problems=final, summary=report_summary)
