"""Collapse curves of learner runs: ``harness report`` on a folder holding the learner's ``metrics.jsonl``.

A learner run (``harness train`` / ``baselines.ppo``) logs one row per iteration: success, token entropy, and,
every ``mi_every`` iterations, the MI family on the pre-filter batch. Template collapse shows as the MI proxies
(retrieval accuracy, MI estimate) falling while token entropy holds; this module draws those curves
(``training_curves.png``), writes ``training_report.md`` with the first and last measurement of each, and flags
the pattern. Several runs given together are drawn side by side; runs whose folder names differ only by a
trailing ``seed<k>`` are pooled into one line with a band (min to max over the seeds).

The flag is a heuristic, not a test: the fixed probe's (else the batch's first-turn, else trajectory) retrieval
accuracy down by ≥ 0.2 from its first measurement to its last while token entropy stays ≥ 0.9× its first value.
A run with fewer than 3 MI measurements gets "not enough MI points", never a verdict. On-batch first-turn readings
whose batch shared a key feature between prompts are flagged: their retrieval is capped by the prompts drawn.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from harness.training_log import (
    BATCH,
    CEILING,
    ITERATION,
    METRICS_FILE,
    PROBE,
    SHARED_FEATURES,
    SUCCESS,
    TOKEN_ENTROPY,
    mi_key,
)

CURVES = (
    (SUCCESS, "success"),
    (mi_key(PROBE, "first_turn", "retrieval_accuracy"), "probe retrieval accuracy (fixed prompts)"),
    (mi_key(PROBE, "first_turn", "mi_estimate"), "probe MI estimate (nats)"),
    (mi_key(BATCH, "first_turn", "retrieval_accuracy"), "first-turn retrieval accuracy"),
    (mi_key(BATCH, "first_turn", "mi_estimate"), "first-turn MI estimate (nats)"),
    (mi_key(BATCH, "trajectory", "retrieval_accuracy"), "trajectory retrieval accuracy"),
    (mi_key(BATCH, "trajectory", "mi_zscore"), "trajectory MI z-score"),
    (TOKEN_ENTROPY, "token entropy (nats)"),
)
RETRIEVAL_DROP = 0.2
ENTROPY_HELD = 0.9
MIN_MI_POINTS = 3
"""Fewer MI measurements than this and the collapse check says so instead of concluding: a first and a last point
(or one) cannot tell a trend from sampling noise."""


def is_learner_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a learner run (it has a metrics.jsonl), not a rollout run."""
    return (Path(run_dir) / METRICS_FILE).is_file()


def load_rows(run_dir: Path) -> list[dict]:
    """The iteration rows of a learner run (a clear error for a folder that is not one)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no {METRICS_FILE} (not a learner run folder)")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not a JSON line ({error.msg})") from None
    return sorted(rows, key=lambda r: r.get(ITERATION, 0))


def series(rows: Sequence[dict], key: str) -> list[tuple[int, float]]:
    """(iteration, value) for the rows that logged a finite ``key``."""
    out = []
    for row in rows:
        value = row.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            out.append((int(row[ITERATION]), float(value)))
    return out


READINGS = ((PROBE, "first_turn"), (BATCH, "first_turn"), (BATCH, "trajectory"))
"""Where the check reads retrieval, (reading, scheme) in order of preference: the fixed probe (same prompts at every
reading), then the batch's first turns, then its trajectory draws."""


def mi_point_count(rows: Sequence[dict]) -> int:
    """How many iterations logged the MI family's retrieval accuracy (the reading with the most)."""
    return max(len(series(rows, mi_key(*reading, "retrieval_accuracy"))) for reading in READINGS)


def shared_batches(rows: Sequence[dict]) -> str | None:
    """A sentence when on-batch first-turn readings came from batches whose prompts share a key feature (their
    retrieval is then capped by the batch, not the policy), else None."""
    shared = series(rows, mi_key(BATCH, "first_turn", SHARED_FEATURES))
    hits = [i for i, v in shared if v > 0]
    if not hits:
        return None
    ceilings = []
    for row in rows:
        if row.get(ITERATION) in hits:
            values = [v for k, v in row.items() if k.startswith(mi_key(BATCH, "first_turn", CEILING))]
            if values:
                ceilings.append(min(values))
    ceiling = f" (lowest feature ceiling {sum(ceilings) / len(ceilings):.2f} on average)" if ceilings else ""
    probe = series(rows, mi_key(PROBE, "first_turn", "retrieval_accuracy"))
    advice = "the probe's curve is not" if probe else "train with --mi-probe-seeds to read fixed prompts"
    return (
        f"{len(hits)} of {len(shared)} on-batch first-turn readings came from batches whose prompts share a key "
        f"feature{ceiling}: their retrieval is capped by the prompts drawn, not by the policy; {advice}"
    )


def collapse_flag(rows: Sequence[dict]) -> str | None:
    """A sentence when the run shows the template-collapse pattern (see the module docstring), else None."""
    entropy = series(rows, TOKEN_ENTROPY)
    for reading, scheme_name in READINGS:
        retrieval = series(rows, mi_key(reading, scheme_name, "retrieval_accuracy"))
        scheme = "probe first-turn" if reading == PROBE else scheme_name
        if len(retrieval) < MIN_MI_POINTS or len(entropy) < 2:
            continue
        (i0, r0), (i1, r1) = retrieval[0], retrieval[-1]
        e0, e1 = entropy[0][1], entropy[-1][1]
        if r0 - r1 >= RETRIEVAL_DROP and e1 >= ENTROPY_HELD * e0:
            return (
                f"template-collapse pattern: {scheme} retrieval accuracy fell {r0:.2f} → {r1:.2f} (iterations "
                f"{i0} → {i1}) while token entropy held ({e0:.2f} → {e1:.2f})"
            )
        return None
    return None


def pool(run_dirs: Sequence[Path]) -> dict[str, list[list[dict]]]:
    """Runs grouped by label: the folder name without a trailing ``seed<k>`` (and its separator)."""
    groups: dict[str, list[list[dict]]] = {}
    for run_dir in run_dirs:
        resolved = Path(run_dir).resolve()
        if re.fullmatch(r"seed\d+", resolved.name):
            label = resolved.parent.name
        else:
            label = re.sub(r"[-_]seed\d+$", "", resolved.name) or resolved.name
        groups.setdefault(label, []).append(load_rows(Path(run_dir)))
    return groups


def plot_curves(
    groups: dict[str, list[list[dict]]], path: Path, keys: Sequence[tuple[str, str]] = CURVES, title: str = ""
) -> Path | None:
    """One panel per key that any run logged: each group's mean over its runs, with a min-max band when a group
    holds several runs. Returns the written path, or None when matplotlib is missing or nothing was logged."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    shown = [(k, label) for k, label in keys if any(series(r, k) for runs in groups.values() for r in runs)]
    if not shown:
        return None
    columns = min(3, len(shown))
    lines = -(-len(shown) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.6 * columns, 3.3 * lines), squeeze=False)
    # the grid can hold more axes than there are plots: the spare ones are blanked below
    for ax, (key, label) in zip(axes.flat, shown, strict=False):
        for name, runs in groups.items():
            by_iteration: dict[int, list[float]] = {}
            for rows in runs:
                for i, v in series(rows, key):
                    by_iteration.setdefault(i, []).append(v)
            if not by_iteration:
                continue
            xs = sorted(by_iteration)
            mean = [sum(by_iteration[x]) / len(by_iteration[x]) for x in xs]
            (line,) = ax.plot(xs, mean, marker="o", markersize=3, label=f"{name} (n={len(runs)})")
            if len(runs) > 1:
                low = [min(by_iteration[x]) for x in xs]
                high = [max(by_iteration[x]) for x in xs]
                ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report_training(run_dirs: Sequence[Path], out_dir: Path | None = None) -> str:
    """Write ``training_report.md`` and ``training_curves.png`` (into ``out_dir``, default the single run's
    folder) and return the report text."""
    run_dirs = [Path(r) for r in run_dirs]
    if out_dir is None:
        if len(run_dirs) != 1:
            raise ValueError("several learner runs need --out (a folder for the combined report)")
        out_dir = run_dirs[0]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = pool(run_dirs)
    lines = ["# Learner runs: collapse curves", "", "| run | iterations | " + " | ".join(
        label for _, label in CURVES) + " |", "|---|---|" + "---|" * len(CURVES)]  # fmt: skip
    flags, checked = [], 0
    for run_dir in run_dirs:
        rows = load_rows(run_dir)
        cells = []
        for key, _ in CURVES:
            values = series(rows, key)
            cells.append(f"{values[0][1]:.3f} → {values[-1][1]:.3f}" if values else "–")
        lines.append(f"| {run_dir.name} | {len(rows)} | " + " | ".join(cells) + " |")
        points = mi_point_count(rows)
        if points < MIN_MI_POINTS:
            flags.append(
                f"- {run_dir.name}: not enough MI points ({points} logged; the check needs ≥ {MIN_MI_POINTS}): train "
                "more iterations or log the MI family more often (`mi_every`)"
            )
            continue
        checked += 1
        capped = shared_batches(rows)
        if capped:
            flags.append(f"- {run_dir.name}: {capped}")
        flag = collapse_flag(rows)
        if flag:
            flags.append(f"- {run_dir.name}: {flag}")
    lines += ["", "Cells: first → last logged value. MI proxies come every `mi_every` iterations (pre-filter batch)."]
    lines += ["", "## Collapse check", ""]
    if checked and not any("pattern" in flag for flag in flags):
        flags.append(
            f"- no run with ≥ {MIN_MI_POINTS} MI points shows the template-collapse pattern (retrieval down ≥ "
            f"{RETRIEVAL_DROP} with entropy held)."
        )
    lines += flags
    plot = plot_curves(groups, out_dir / "training_curves.png")
    lines += ["", f"![curves]({plot.name})" if plot else "(plots need matplotlib: pip install 'ragen-envs[report]')"]
    text = "\n".join(lines) + "\n"
    (out_dir / "training_report.md").write_text(text, encoding="utf-8")
    return text
