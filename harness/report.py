"""Rendering a run's summary (:mod:`harness.summary` computes it): summary.json / summary.csv / optional Parquet /
report.md / PNG plots, the end-of-run table, and runs side by side.

Nothing here computes a metric or runs a model. pandas (CSV/Parquet) and matplotlib (plots) are imported lazily
from the ``report`` extra; without them the run still writes summary.json and report.md and says what to install.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.mi import FEW_PROMPTS, SCHEMES
from harness.records import SUMMARY, EpisodeRecord, read_run_json, write_json_atomic

REPORT_EXTRA = "pip install 'ragen-envs[report]'"


def value(row: dict[str, Any], name: str) -> float | None:
    """The value of metric ``name`` in a summary row (None when the row lacks it or it is unavailable)."""
    return row["metrics"].get(name, {}).get("value")


def _fmt(metric: dict[str, Any] | None, digits: int = 3, stderr: bool = False, sep: str = " ± ") -> str:
    if not metric or metric.get("value") is None:
        return "n/a"
    text = f"{metric['value']:.{digits}f}"
    if stderr and metric.get("stderr") is not None:
        text += f"{sep}{metric['stderr']:.{digits}f}"
    return text


TABLE_COLUMNS = (
    ("success_rate", True, True),
    ("mean_return", False, True),
    ("pass@k", False, False),
    ("invalid_action_rate", False, False),
    ("mean_turns", False, False),
    ("mean_tokens", False, False),
    ("token_entropy", False, True),
    ("trajectory/mi_estimate", True, True),
    ("trajectory/retrieval_accuracy", False, True),
    ("trajectory/retrieval_chance", False, False),
    ("trajectory/mi_zscore", False, False),
    ("reward_std_in_group", False, False),
)
"""The end-of-run table: (summary key, shown with ± one standard error, in the default narrow table). Each
column is headed by its metric's name (the MI family's without the ``trajectory/`` scheme prefix, said below
the table); ``--wide`` shows every column."""

TABLE_WIDTH = 120
"""Characters the default table fits in (a terminal, a report viewed as text): env and agent cells are
shortened with '…' when the rows would be wider."""

FEW_MARK = "†"


def table_columns(wide: bool = False) -> list[tuple[str, bool]]:
    """The (summary key, with ±) columns of the default table, or of the wide one."""
    return [(key, se) for key, se, narrow in TABLE_COLUMNS if wide or narrow]


def few_prompts(metrics: dict[str, Any], scheme: str) -> int | None:
    """The scheme's distinct prompts when they are fewer than ``FEW_PROMPTS`` (its MI cells get flagged), else None."""
    count = (metrics.get(f"{scheme}/distinct_prompts") or {}).get("value")
    return int(count) if count is not None and count < FEW_PROMPTS else None


def _cell(metrics: dict[str, Any], key: str, stderr: bool, sep: str = " ± ", mark: str | None = None) -> str:
    """One metric's cell; an MI-family cell over fewer than ``FEW_PROMPTS`` prompts is flagged, by ``mark`` when
    given (a compact table with a footnote), else by "(k prompts)"."""
    if key.endswith("distinct_prompts"):
        return _fmt(metrics.get(key), 0)
    text = _fmt(metrics.get(key), 3, stderr, sep)
    scheme, slash, _ = key.partition("/")
    few = few_prompts(metrics, scheme) if slash else None
    if few is None or text == "n/a":
        return text
    return f"{text}{mark}" if mark is not None else f"{text} ({few} prompts)"


def table_header(wide: bool = False) -> list[str]:
    """The table's header: env, agent, n and the metric names."""
    return ["env", "agent", "n", *(key.rpartition("/")[2] for key, _ in table_columns(wide))]


def table_rows(summary: dict[str, Any], wide: bool = False) -> list[list[str]]:
    """The end-of-run table's rows: env, agent, episodes and the table's metric cells, one per summary row."""
    out = []
    for row in summary["rows"]:
        cells = [row["env_id"], row["agent"], str(row["episodes"])]
        cells += [_cell(row["metrics"], key, se, sep="±", mark=FEW_MARK) for key, se in table_columns(wide)]
        out.append(cells)
    return out


def table_notes(summary: dict[str, Any]) -> list[str]:
    """The lines under the table: what ± and the scheme are, and the footnote of flagged cells."""
    notes = ["± one standard error; mi_estimate, retrieval_* and mi_zscore: trajectory-uniform pairs; n/a: unavailable "
             "(summary.json says why), never 0"]  # fmt: skip
    if any(FEW_MARK in cell for row in table_rows(summary, wide=True) for cell in row):
        notes.append(
            f"{FEW_MARK} compares fewer than {FEW_PROMPTS} distinct prompts: its ± says little about how it would "
            "move with other prompts (run more seeds)"
        )
    return notes


def shorten(text: str, width: int, keep_end: bool = False) -> str:
    """``text`` cut to ``width`` characters with '…' (at the end, or at the start with ``keep_end``)."""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if keep_end else text[: width - 1] + "…"


def format_table(summary: dict[str, Any], wide: bool = False, width: int = TABLE_WIDTH) -> str:
    """The end-of-run table (plain text, aligned) and its notes. The default table fits ``width`` characters:
    the metrics a reader compares first, env ids and agent specs shortened with '…' when needed; ``wide`` shows
    every column at full length."""
    lines = aligned(table_header(wide), table_rows(summary, wide), None if wide else width)
    notes = [textwrap.fill(note, width, subsequent_indent="  ") for note in table_notes(summary)]
    return "\n".join([*lines, *notes])


def aligned(header: Sequence[str], body: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """Header, rule and rows as aligned text. With ``width``, the first two columns (env id, agent spec) give way
    when the rows are wider: the agent spec first (cut at its start: checkpoints differ at the end), then the env
    id, each down to 8 characters."""
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    excess = sum(widths) + 2 * (len(widths) - 1) - (width or 0)
    if width is not None and excess > 0:
        for column in (1, 0):
            cut = min(excess, max(widths[column] - 8, 0))
            widths[column] -= cut
            excess -= cut
        body = [[shorten(r[0], widths[0]), shorten(r[1], widths[1], keep_end=True), *r[2:]] for r in body]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in body]
    return "\n".join(lines)


def render_markdown(summary: dict[str, Any], plots: Sequence[str] = ()) -> str:
    """report.md: the main table, the MI family per scheme, definitions and plots."""
    parts = [
        f"# Run {summary.get('run_id', '')}",
        "",
        "Per env × agent; columns are the metrics of the Definitions below (`harness report --wide` and the last "
        "table here show them all).",
        "",
        _markdown_table(table_header(), table_rows(summary)),
        "",
        *(f"{note}  " for note in table_notes(summary)),
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
    parts += ["", "## Every table metric", "", _markdown_table(table_header(wide=True), table_rows(summary, wide=True))]
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
    """success.png: :func:`success_figure` saved."""
    import matplotlib.pyplot as plt

    fig = success_figure(summary)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # the legend sits outside the axes
    plt.close(fig)


def success_figure(summary: dict[str, Any]):
    """Success rate per env, one bar per agent, whiskers of one standard error. Every bar carries its value, so
    a rate of 0 reads "0" (a bar of height 0 is otherwise invisible) and an unavailable one "n/a"."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    envs = list(dict.fromkeys(r["env_id"] for r in summary["rows"]))
    agents = list(dict.fromkeys(r["agent"] for r in summary["rows"]))
    fig, ax = plt.subplots(figsize=(min(14, max(6, 0.55 * len(envs) * max(1, len(agents)) + 2.5)), 4.2))
    width = 0.8 / max(len(agents), 1)
    label_size = 7 if len(envs) * len(agents) <= 24 else 5.5
    for a, agent in enumerate(agents):
        xs = [e + a * width - 0.4 + width / 2 for e in range(len(envs))]
        metrics = []
        for env in envs:
            row = next((r for r in summary["rows"] if r["env_id"] == env and r["agent"] == agent), None)
            metrics.append(row["metrics"].get("success_rate", {}) if row else {})
        heights = [cell.get("value") or 0.0 for cell in metrics]
        errors = [cell.get("stderr") or 0.0 for cell in metrics]
        bars = ax.bar(xs, heights, width, yerr=errors, capsize=2, error_kw={"lw": 0.8}, label=agent)
        for x, h, err, cell in zip(xs, heights, errors, metrics, strict=True):
            text = "n/a" if cell.get("value") is None else f"{h:.2f}".rstrip("0").rstrip(".")
            ax.text(x, h + err + 0.015, text, ha="center", va="bottom", fontsize=label_size, rotation=90,
                    color=bars.patches[0].get_facecolor())  # fmt: skip
    ax.set_xticks(range(len(envs)))
    ax.set_xticklabels([e.removeprefix("ragen/") for e in envs], rotation=20, ha="right")
    ax.set_ylim(0, 1.18)  # room above 1.0 for the value labels
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("success rate")
    run_id = summary.get("run_id")
    ax.set_title("Success rate per env and agent" + (f"\nrun {run_id}" if run_id else ""), fontsize=9)
    handles, _ = ax.get_legend_handles_labels()
    whisker = Line2D([], [], color="black", lw=0.8, marker="_", markersize=8, label="± 1 standard error")
    ax.legend(handles=[*handles, whisker], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0, title="agent", title_fontsize=8)  # fmt: skip
    return fig  # no tight_layout: a long agent spec in the legend defeats it; savefig's tight bbox holds all


ENV_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "8", "d")
"""One marker per env in the MI plot (colour is the agent): a legend, not labels next to the points, because an
input-agnostic agent puts every env at MI ≈ 0 and labels there overlap."""


SCATTER_SIZE = 46
"""Marker area (points²) in the MI-vs-entropy scatter."""


def spread_overlaps(
    positions: np.ndarray, diameter: float, bounds: tuple[float, float, float, float] | None = None
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Offsets (in points) that put markers closer than ``diameter`` to one another on a ring around their
    group's centre, and the centres of the groups moved.

    An input-agnostic agent puts every env at MI ≈ 0 with nearly the same entropy: drawn as they are, those
    points are one blob. Groups are the connected components of "closer than ``diameter``"; a group of ``k``
    goes on a ring whose neighbours are just over ``diameter`` apart. With ``bounds`` (x0, y0, x1, y1: the axes,
    in points) a ring that would cross them is moved inside whole (the axes' limits stay those of the data).
    """
    count = len(positions)
    group = list(range(count))

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for i in range(count):
        for j in range(i + 1, count):
            if np.hypot(*(positions[i] - positions[j])) < diameter:
                group[root(i)] = root(j)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(count):
        members[root(i)].append(i)
    shift = np.zeros((count, 2))
    centres = []
    for indices in members.values():
        k = len(indices)
        if k < 2:
            continue
        centre = positions[indices].mean(axis=0)
        radius = max(diameter, 1.15 * diameter / (2 * math.sin(math.pi / k)))
        angles = [math.pi / 2 + 2 * math.pi * n / k for n in range(k)]
        ring = centre + radius * np.array([[math.cos(a), math.sin(a)] for a in angles])  # (k, 2)
        if bounds is not None:
            low = np.array(bounds[:2]) + diameter / 2
            high = np.array(bounds[2:]) - diameter / 2
            ring += np.maximum(low - ring.min(axis=0), 0) - np.maximum(ring.max(axis=0) - high, 0)
        shift[indices] = ring - positions[indices]
        centres.append((float(centre[0]), float(centre[1])))
    return shift, centres


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
    from matplotlib.transforms import ScaledTranslation

    agents = list(dict.fromkeys(p[0] for p in points))
    envs = list(dict.fromkeys(p[1] for p in points))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {agent: colours[i % len(colours)] for i, agent in enumerate(agents)}
    marker = {env: ENV_MARKERS[i % len(ENV_MARKERS)] for i, env in enumerate(envs)}
    fig, (ax, by_env) = plt.subplots(1, 2, figsize=(12.5, max(4.8, 0.32 * len(envs) + 1.6)),
                                     gridspec_kw={"width_ratios": (1.35, 1.0), "wspace": 0.85})  # fmt: skip
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.88)  # legends sit in the gap between the axes
    xy = np.array([(entropy, mi) for _, _, entropy, mi in points], dtype=np.float64).reshape(-1, 2)
    ax.update_datalim(xy)
    ax.autoscale_view()
    to_points = 72.0 / fig.dpi
    placed = ax.transData.transform(xy) * to_points
    box = ax.get_window_extent()
    bounds = (box.x0 * to_points, box.y0 * to_points, box.x1 * to_points, box.y1 * to_points)
    shift, centres = spread_overlaps(placed, math.sqrt(SCATTER_SIZE) + 1.5, bounds)
    for (agent, env, entropy, mi), (dx, dy) in zip(points, shift, strict=True):
        moved = ax.transData + ScaledTranslation(dx / 72.0, dy / 72.0, fig.dpi_scale_trans)
        ax.scatter([entropy], [mi], s=SCATTER_SIZE, marker=marker[env], color=colour[agent], alpha=0.85,
                   edgecolors="white", linewidths=0.5, transform=moved, zorder=3)  # fmt: skip
    if centres:  # where a spread group really sits
        centre_xy = ax.transData.inverted().transform(np.array(centres) / to_points)
        ax.scatter(centre_xy[:, 0], centre_xy[:, 1], s=6, color="0.2", marker="o", zorder=4)
        fig.text(0.07, 0.015, "Points that would overlap are spread on a ring around their shared position (small "
                 "dark dot); the right panel gives each one's exact MI.", fontsize=7, color="0.3")  # fmt: skip
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
    summary = read_run_json(
        path,
        f"{run_dir}: no {SUMMARY} (is the run finished? resume it with --resume {run_dir})",
        f"rewrite it with `harness run --resume {run_dir}`",
    )
    if not isinstance(summary, dict) or not isinstance(summary.get("rows"), list):
        raise ValueError(f"{path}: not a harness summary (no 'rows' list)")
    return summary


COMPARE_KEYS = ("success_rate", "trajectory/mi_estimate", "trajectory/retrieval_accuracy", "trajectory/mi_zscore",
                "token_entropy")  # fmt: skip


def compare(run_dirs: Sequence[Path], out: Path | None = None, stream: Any = None) -> str:
    """Runs side by side: one row per env, agent and run that has it (runs labelled a, b, …, named under the table), aligned
    in 120 columns on ``stream``; with ``out``, report.md (the same as a Markdown table) and the MI-vs-entropy plot."""
    stream = stream or sys.stdout
    summaries = [(Path(d).name, load_summary(Path(d))) for d in run_dirs]
    labels = [chr(ord("a") + i) if i < 26 else str(i + 1) for i in range(len(summaries))]
    keys = list(dict.fromkeys((r["env_id"], r["agent"]) for _, s in summaries for r in s["rows"]))
    header = ["env", "agent", "run", *(key.rpartition("/")[2] for key in COMPARE_KEYS)]
    body = []
    for env_id, agent in keys:
        for label, (_, summary) in zip(labels, summaries, strict=True):
            row = next((r for r in summary["rows"] if (r["env_id"], r["agent"]) == (env_id, agent)), None)
            if row is None:  # this run did not roll this agent out on this env
                continue
            cells = [_fmt(row["metrics"].get(key), 3, key in ("success_rate", "trajectory/mi_estimate"), "±")
                     for key in COMPARE_KEYS]  # fmt: skip
            body.append([env_id, agent, label, *cells])
    legend = [f"{label}: {name}" for label, (name, _) in zip(labels, summaries, strict=True)]
    legend.append("± one standard error; mi_estimate, retrieval_accuracy, mi_zscore: trajectory-uniform pairs")
    text = "\n".join([*aligned(header, body, TABLE_WIDTH), *legend])
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
        doc = [f"# Runs side by side: {runs}", "", _markdown_table(header, body), "", *(f"{line}  " for line in legend)]
        doc += [""] + [f"![{n}]({n})" for n in names]
        (out / "report.md").write_text("\n".join(doc) + "\n", encoding="utf-8")
    stream.write(text + "\n")
    return text
