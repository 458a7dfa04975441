"""Summaries and reports: summary.json / summary.csv / optional Parquet / report.md / PNG plots.

``summary.json`` holds one row per env × agent; every metric is ``{"value", "stderr", "n"}``, or
``{"value": null, "stderr": null, "n": 0, "unavailable": "<why>"}`` when it cannot be computed (an
agent that cannot score has no MI: it is reported as unavailable, never as 0). MI metrics are named
``<scheme>/<key>`` with scheme ``first_turn`` or ``trajectory``. Nothing in summary.json depends on
timing, worker count or backend. pandas (CSV/Parquet) and matplotlib (plots) are imported lazily from the
``report`` extra; without them the run still writes summary.json and report.md and says what to install.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import metrics as m
from harness.agents.base import Agent
from harness.collapse import COLLAPSE_KEYS, COLLAPSE_SEQ_KEYS, FEW_PROMPTS
from harness.config import RunConfig
from harness.mi import SCHEMES, collapse_for
from harness.records import SUMMARY, EpisodeRecord, sort_episodes, write_json_atomic

REPORT_EXTRA = "pip install 'ragen-envs[report]'"

MI_KEYS = COLLAPSE_KEYS + COLLAPSE_SEQ_KEYS


def _unavailable(reason: str) -> dict[str, Any]:
    return {"value": None, "stderr": None, "n": 0, "unavailable": reason}


def summarize(
    config: RunConfig,
    records: Sequence[EpisodeRecord],
    agents: dict[str, Agent],
    *,
    run_id: str = "",
    progress: Any = None,
    timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The summary document of a run's records; ``agents`` holds each spec's scoring agent when
    ``config.mi_samples`` > 0 (the caller builds them: this module renders, it does not load models).

    ``progress`` (a :class:`harness.progress.Progress` keyed by agent) advances once per (agent, env) row; ``timings`` gets
    ``"mi_s"``, the seconds spent on the MI family (kept out of the summary, which must not depend on speed).
    """
    missing = [spec for spec in config.agents if config.mi_samples and spec not in agents]
    if missing:
        raise ValueError(f"summarize: no scoring agent for {missing[0]!r} (needed for the MI family, mi_samples > 0)")
    grouped: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for record in sort_episodes(list(records)):
        grouped[(record["agent"], record["env_id"])].append(record)
    rows = []
    for spec in config.agents:
        for plan in config.envs:
            episodes = grouped.get((spec, plan.env_id), [])
            row_metrics: dict[str, Any] = {}
            for metric in m.episode_metrics():
                try:
                    estimate = metric.fn(episodes, plan.samples) if metric.takes_samples else metric.fn(episodes)
                    row_metrics[metric.name] = estimate.to_json()
                except (m.MetricUnavailable, ValueError) as exc:
                    row_metrics[metric.name] = _unavailable(str(exc))
            started = time.perf_counter()
            collapse = (
                collapse_for(agents[spec], episodes, config.seed, config.mi_samples, config.mi_columns)
                if config.mi_samples
                else dict.fromkeys(SCHEMES, "disabled (mi_samples = 0)")
            )
            if timings is not None:
                timings["mi_s"] = timings.get("mi_s", 0.0) + time.perf_counter() - started
            if progress is not None:
                progress.advance(spec, 1)
            for scheme, result in collapse.items():
                for key in MI_KEYS:
                    name = f"{scheme}/{key}"
                    if isinstance(result, str):
                        row_metrics[name] = _unavailable(result)
                    else:
                        row_metrics[name] = result[key].to_json()
            rows.append(
                {
                    "env_id": plan.env_id,
                    "agent": spec,
                    "episodes": len(episodes),
                    "seeds": plan.episodes,
                    "samples": plan.samples,
                    "metrics": row_metrics,
                }
            )
    return {
        "format_version": 1,
        "run_id": run_id,
        "rows": rows,
        "skipped_envs": dict(config.skipped_envs),
        "definitions": m.definitions(),
    }


def value(row: dict[str, Any], name: str) -> float | None:
    """The value of metric ``name`` in a summary row (None when the row lacks it or it is unavailable)."""
    return row["metrics"].get(name, {}).get("value")


def _fmt(metric: dict[str, Any] | None, digits: int = 3, stderr: bool = False) -> str:
    if not metric or metric.get("value") is None:
        return "n/a"
    text = f"{metric['value']:.{digits}f}"
    if stderr and metric.get("stderr") is not None:
        text += f" ± {metric['stderr']:.{digits}f}"
    return text


TABLE_COLUMNS = (
    ("success", "success_rate", True),
    ("return", "mean_return", False),
    ("pass@k", "pass@k", False),
    ("invalid", "invalid_action_rate", False),
    ("turns", "mean_turns", False),
    ("tokens", "mean_tokens", False),
    ("entropy", "token_entropy", False),
    ("MI", "trajectory/mi_estimate", False),
    ("retrieval", "trajectory/retrieval_accuracy", False),
    ("chance", "trajectory/retrieval_chance", False),
    ("MI z", "trajectory/mi_zscore", False),
    ("RV std", "reward_std_in_group", False),
)


def few_prompts(metrics: dict[str, Any], scheme: str) -> int | None:
    """The scheme's distinct prompts when they are fewer than ``FEW_PROMPTS`` (its MI cells get flagged), else None."""
    count = (metrics.get(f"{scheme}/distinct_prompts") or {}).get("value")
    return int(count) if count is not None and count < FEW_PROMPTS else None


def _cell(metrics: dict[str, Any], key: str, stderr: bool) -> str:
    if key.endswith("distinct_prompts"):
        return _fmt(metrics.get(key), 0)
    text = _fmt(metrics.get(key), 3, stderr)
    scheme, slash, _ = key.partition("/")
    few = few_prompts(metrics, scheme) if slash else None
    return f"{text} ({few} prompts)" if few is not None and text != "n/a" else text


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The end-of-run table's rows: env, agent, episodes and the table's metric cells, one per summary row."""
    out = []
    for row in summary["rows"]:
        cells = [row["env_id"], row["agent"], str(row["episodes"])]
        cells += [_cell(row["metrics"], key, se) for _, key, se in TABLE_COLUMNS]
        out.append(cells)
    return out


def format_table(summary: dict[str, Any]) -> str:
    """The end-of-run table (plain text, aligned)."""
    header = ["env", "agent", "n", *(title for title, _, _ in TABLE_COLUMNS)]
    body = table_rows(summary)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in body]
    return "\n".join(lines)


def render_markdown(summary: dict[str, Any], plots: Sequence[str] = ()) -> str:
    """report.md: the main table, the MI family per scheme, definitions and plots."""
    header = ["env", "agent", "n", *(title for title, _, _ in TABLE_COLUMNS)]
    parts = [
        f"# Run {summary.get('run_id', '')}",
        "",
        "Per env × agent; ± is one standard error. MI columns use the trajectory-uniform scheme; `n/a` means "
        "the metric is unavailable (see summary.json for why), never zero. An MI-family value marked "
        f"`(k prompts)` compares fewer than {FEW_PROMPTS} distinct prompts: its ± is the spread over reasonings "
        "and says little about how it would move with other prompts (run more seeds).",
        "",
        _markdown_table(header, table_rows(summary)),
    ]
    skipped = summary.get("skipped_envs") or {}
    if skipped:
        parts += ["", "## Skipped envs", "", "Not run on this machine (the rows above do not include them):", ""]
        parts += [f"- `{env_id}`: {reason}" for env_id, reason in skipped.items()]
    for scheme in SCHEMES:
        keys = ("mi_estimate", "cond_entropy_estimate", "reasoning_entropy_estimate", "retrieval_accuracy")
        keys += ("retrieval_accuracy@2", "retrieval_chance", "mi_zscore", "mi_estimate_seq", "mi_zscore_seq")
        keys += ("distinct_prompts",)
        body = [
            [row["env_id"], row["agent"], *(_cell(row["metrics"], f"{scheme}/{k}", True) for k in keys)]
            for row in summary["rows"]
        ]
        parts += [
            "",
            f"## MI proxy family: {scheme.replace('_', '-')} pairs",
            "",
            _markdown_table(["env", "agent", *keys], body),
        ]
    parts += ["", "## Definitions", ""]
    parts += [f"- `{name}`: {text}" for name, text in summary.get("definitions", {}).items()]
    if plots:
        parts += ["", "## Plots", ""] + [f"![{name}]({name})" for name in plots]
    return "\n".join(parts) + "\n"


def flat_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat dict per row: metric, metric_stderr, metric_n columns (for CSV/Parquet)."""
    out = []
    for row in summary["rows"]:
        flat = {k: row[k] for k in ("env_id", "agent", "episodes", "seeds", "samples")}
        for name, metric in row["metrics"].items():
            flat[name] = metric.get("value")
            flat[f"{name}_stderr"] = metric.get("stderr")
            flat[f"{name}_n"] = metric.get("n")
        out.append(flat)
    return out


def plot_success(summary: dict[str, Any], path: Path) -> None:
    """Grouped bars: success rate per env, one bar per agent, with standard-error whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r["env_id"] for r in summary["rows"]))
    agents = list(dict.fromkeys(r["agent"] for r in summary["rows"]))
    fig, ax = plt.subplots(figsize=(min(12, max(5, 0.5 * len(envs) * max(1, len(agents)) + 2)), 3.8))
    width = 0.8 / max(len(agents), 1)
    for a, agent in enumerate(agents):
        heights, errors = [], []
        for env in envs:
            row = next((r for r in summary["rows"] if r["env_id"] == env and r["agent"] == agent), None)
            metric = row["metrics"]["success_rate"] if row else {}
            heights.append(metric.get("value") or 0.0)
            errors.append(metric.get("stderr") or 0.0)
        ax.bar([e + a * width - 0.4 + width / 2 for e in range(len(envs))], heights, width, yerr=errors, label=agent)
    ax.set_xticks(range(len(envs)))
    ax.set_xticklabels([e.removeprefix("ragen/") for e in envs], rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


ENV_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "8", "d")
"""One marker per env in the MI plot (colour is the agent): a legend, not labels next to the points, because an
input-agnostic agent puts every env at MI ≈ 0 and labels there overlap."""


def plot_mi_entropy(points: Sequence[tuple[str, str, float, float]], path: Path, title: str) -> None:
    """mi_entropy.png: :func:`mi_entropy_figure` saved."""
    import matplotlib.pyplot as plt

    fig = mi_entropy_figure(points, title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def mi_entropy_figure(points: Sequence[tuple[str, str, float, float]], title: str):
    """Left: MI estimate vs reasoning entropy H(Z), colour = agent, marker = env (two legends beside the axes);
    template collapse sits bottom right. Right: MI per env, agents side by side. ``points`` are (agent, env
    label, entropy, MI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    agents = list(dict.fromkeys(p[0] for p in points))
    envs = list(dict.fromkeys(p[1] for p in points))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {agent: colours[i % len(colours)] for i, agent in enumerate(agents)}
    marker = {env: ENV_MARKERS[i % len(ENV_MARKERS)] for i, env in enumerate(envs)}
    fig, (ax, by_env) = plt.subplots(1, 2, figsize=(12.5, max(4.8, 0.32 * len(envs) + 1.6)),
                                     gridspec_kw={"width_ratios": (1.35, 1.0), "wspace": 0.85})  # fmt: skip
    for agent, env, entropy, mi in points:
        ax.scatter([entropy], [mi], s=46, marker=marker[env], color=colour[agent], alpha=0.8, edgecolors="white",
                   linewidths=0.5)  # fmt: skip
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("reasoning entropy estimate H(Z) (nats/token)")
    ax.set_ylabel("MI estimate I(X;Z) (nats/token)")
    ax.set_title(title + "\n(high H(Z) with MI ≈ 0 = template collapse)", fontsize=9)
    agent_handles = [Line2D([], [], ls="", marker="o", color=colour[a], label=a) for a in agents]
    env_handles = [Line2D([], [], ls="", marker=marker[e], color="0.35", label=e) for e in envs]
    first = ax.legend(handles=agent_handles, title="agent", fontsize=7, title_fontsize=7, loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # fmt: skip
    ax.add_artist(first)
    ax.legend(handles=env_handles, title="env", fontsize=7, title_fontsize=7, loc="lower left",
              bbox_to_anchor=(1.01, 0.0), borderaxespad=0.0)  # fmt: skip
    # The same MI values with one row per env (agents side by side): points that sit on top of each other in
    # the scatter, such as an input-agnostic agent's at MI ≈ 0, are told apart here.
    dodge = 0.6 / max(len(agents), 1)
    for a, agent in enumerate(agents):
        mine = [(envs.index(env), mi) for name, env, _, mi in points if name == agent]
        offset = (a - (len(agents) - 1) / 2) * dodge
        by_env.scatter([mi for _, mi in mine], [row + offset for row, _ in mine], s=30, color=colour[agent],
                       marker="o", alpha=0.85, label=agent)  # fmt: skip
    by_env.axvline(0.0, color="grey", lw=0.8, ls="--")
    by_env.set_yticks(range(len(envs)))
    by_env.set_yticklabels(envs, fontsize=7)
    by_env.set_ylim(len(envs) - 0.5, -0.5)
    by_env.grid(axis="y", color="0.92")
    by_env.set_xlabel("MI estimate I(X;Z) (nats/token)")
    by_env.set_title("MI per env, agents side by side", fontsize=9)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.11, top=0.88)  # legends sit in the gap between the axes
    return fig


def mi_points(summary: dict[str, Any], prefix: str = "") -> list[tuple[str, str, float, float]]:
    """(agent, env, H(Z), MI) per row, trajectory scheme first, first-turn when that is unavailable."""
    points = []
    for row in summary["rows"]:
        for scheme in ("trajectory", "first_turn"):
            mi = value(row, f"{scheme}/mi_estimate")
            entropy = value(row, f"{scheme}/reasoning_entropy_estimate")
            if mi is not None and entropy is not None and math.isfinite(entropy):
                points.append((f"{prefix}{row['agent']}", row["env_id"].removeprefix("ragen/"), entropy, mi))
                break
    return points


def _warn_missing(what: str, exc: ImportError) -> None:
    warnings.warn(f"{what} skipped ({exc.name or exc} not installed): {REPORT_EXTRA}", stacklevel=3)


def write_tables(
    out: Path, summary: dict[str, Any], records: Sequence[EpisodeRecord] | None, parquet: bool
) -> list[str]:
    """Write summary.csv (and the Parquet files with ``parquet``); returns the names written, none without pandas."""
    written = []
    try:
        import pandas as pd
    except ImportError as exc:
        _warn_missing("summary.csv", exc)
        return written
    frame = pd.DataFrame(flat_rows(summary))
    frame.to_csv(out / "summary.csv", index=False)
    written.append("summary.csv")
    if parquet:
        try:
            frame.to_parquet(out / "summary.parquet", index=False)
            if records is not None:
                episodes = pd.DataFrame(
                    {
                        "agent": [r["agent"] for r in records],
                        "env_id": [r["env_id"] for r in records],
                        "seed": [r["seed"] for r in records],
                        "sample": [r["sample"] for r in records],
                        "return": [r["return"] for r in records],
                        "success": [r["success"] for r in records],
                        "num_turns": [len(r["turns"]) for r in records],
                        "turns_json": [json.dumps(r["turns"], ensure_ascii=False) for r in records],
                    }
                )
                episodes.to_parquet(out / "episodes.parquet", index=False)
            written.append("summary.parquet")
        except ImportError as exc:
            _warn_missing("Parquet", exc)
    return written


def write_plots(out: Path, summary: dict[str, Any]) -> list[str]:
    """Write success.png (and mi_entropy.png with MI); returns the names written, none without matplotlib."""
    try:
        plot_success(summary, out / "success.png")
        names = ["success.png"]
        points = mi_points(summary)
        if points:
            plot_mi_entropy(points, out / "mi_entropy.png", "MI vs reasoning entropy per agent @ env")
            names.append("mi_entropy.png")
        return names
    except ImportError as exc:
        _warn_missing("plots", exc)
        return []


def write_report(
    run_dir: Path,
    summary: dict[str, Any],
    *,
    records: Sequence[EpisodeRecord] | None = None,
    parquet: bool = False,
    plots: bool = True,
) -> None:
    """summary.json, summary.csv, optional Parquet, PNG plots and report.md into ``run_dir``."""
    write_json_atomic(run_dir / SUMMARY, summary)
    write_tables(run_dir, summary, records, parquet)
    names = write_plots(run_dir, summary) if plots else []
    (run_dir / "report.md").write_text(render_markdown(summary, names), encoding="utf-8")


def load_summary(run_dir: Path) -> dict[str, Any]:
    """A finished run's summary.json; raises an error naming the fix when it is missing or not a summary."""
    path = Path(run_dir) / SUMMARY
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no {SUMMARY} (is the run finished? resume it with --resume {run_dir})")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); rewrite it with `harness run --resume {run_dir}`") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("rows"), list):
        raise ValueError(f"{path}: not a harness summary (no 'rows' list)")
    return summary


COMPARE_KEYS = (
    ("success", "success_rate"),
    ("MI", "trajectory/mi_estimate"),
    ("retrieval", "trajectory/retrieval_accuracy"),
    ("MI z", "trajectory/mi_zscore"),
    ("entropy", "token_entropy"),
)


def compare(run_dirs: Sequence[Path], out: Path | None = None, stream: Any = None) -> str:
    """Side-by-side tables (and, with ``out``, report.md and plots) of several runs."""
    stream = stream or sys.stdout
    summaries = [(Path(d).name, load_summary(Path(d))) for d in run_dirs]
    keys = list(dict.fromkeys((r["env_id"], r["agent"]) for _, s in summaries for r in s["rows"]))
    header = ["env", "agent"] + [f"{title} [{name}]" for title, _ in COMPARE_KEYS for name, _ in summaries]
    body = []
    for env_id, agent in keys:
        cells = [env_id, agent]
        for _, key in COMPARE_KEYS:
            for _, summary in summaries:
                row = next((r for r in summary["rows"] if (r["env_id"], r["agent"]) == (env_id, agent)), None)
                cells.append(_fmt(row["metrics"].get(key), 3, key == "success_rate") if row else "—")
        body.append(cells)
    text = _markdown_table(header, body)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        names = []
        try:
            points = [p for name, s in summaries for p in mi_points(s, prefix=f"{name}: ")]
            if points:
                plot_mi_entropy(points, out / "mi_entropy.png", "MI vs reasoning entropy, runs side by side")
                names.append("mi_entropy.png")
        except ImportError as exc:
            _warn_missing("plots", exc)
        runs = ", ".join(f"`{name}`" for name, _ in summaries)
        doc = [f"# Runs side by side: {runs}", "", text]
        doc += [""] + [f"![{n}]({n})" for n in names]
        (out / "report.md").write_text("\n".join(doc) + "\n", encoding="utf-8")
    stream.write(text + "\n")
    return text
