"""``harness mi``: the MI family and token entropy of another trainer's rollouts, per training step.

Reads a rollout dump (:mod:`harness.dumps`: our records, TRL's, verl's, RAGEN-style chats), and for each step
draws up to ``mi_samples`` first-turn (prompt, reasoning) pairs, scores them with a checkpoint (any agent spec)
and computes the family with :func:`harness.mi.score_pairs`, the estimator of ``harness run`` and the learner.
Writes ``mi_steps.jsonl`` (one line per step: each metric ``{value, stderr, n}`` or ``{…, unavailable}``),
``mi_steps.csv``, ``mi_entropy.png`` and ``mi_report.md`` into the output folder.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.agents.base import Agent, ScoringUnavailable
from harness.dumps import Sample
from harness.metrics import Estimate, MetricUnavailable, Unavailable
from harness.mi import context_pairs, score_pairs, subsample_columns
from harness.records import write_json_atomic
from harness.seeding import derive_seed

SHOWN = ("mi_estimate", "retrieval_accuracy", "retrieval_chance", "reasoning_entropy_estimate", "distinct_prompts")


def token_entropy(agent: Agent, samples: Sequence[Sample]) -> Estimate | str:
    """Mean over samples of the policy's per-token entropy on the response (teacher-forced), or why not."""
    measure = getattr(agent, "token_entropy", None)
    if measure is None:
        return f"agent {agent.spec!r} cannot measure token entropy on given text (an hf: checkpoint can)"
    rows = measure([s.context for s in samples], [s.response for s in samples])
    means = [h / n for h, n in rows if n]
    return Estimate.of(means) if means else "no response has tokens"


def step_metrics(agent: Agent, samples: Sequence[Sample], rng: np.random.Generator, mi_samples: int,
                 mi_columns: int | None) -> dict[str, Any]:  # fmt: skip
    """One step's line: its sample counts, the MI family (JSON) and token entropy over the drawn pairs."""
    usable = [s for s in samples if s.reasoning]
    picks = sorted(rng.choice(len(usable), size=min(mi_samples, len(usable)), replace=False).tolist()) if usable else []
    drawn = [usable[i] for i in picks]
    metrics: dict[str, Any] = {}
    try:
        if not drawn:
            raise MetricUnavailable("no response of this step has reasoning text (<think>…</think>)")
        batch = context_pairs([s.context for s in drawn], [s.reasoning or "" for s in drawn])
        if mi_columns is not None:
            batch = subsample_columns(batch, rng, mi_columns)
        metrics.update({key: estimate.to_json() for key, estimate in score_pairs(agent, batch).items()})
    except (MetricUnavailable, ScoringUnavailable, ValueError) as error:
        metrics["mi_estimate"] = Unavailable.because(str(error)).to_json()
    entropy = token_entropy(agent, drawn) if drawn else "no pairs drawn"
    metrics["token_entropy"] = (
        entropy.to_json() if isinstance(entropy, Estimate) else Unavailable.because(entropy).to_json()
    )
    return {"samples": len(samples), "with_reasoning": len(usable), "pairs": len(drawn), "metrics": metrics}


def mi_over_steps(agent: Agent, samples: Sequence[Sample], *, mi_samples: int = 64, mi_columns: int | None = None,
                  seed: int = 0, progress: Any = None) -> list[dict[str, Any]]:  # fmt: skip
    """One line per step (ascending); the pairs of step ``s`` are drawn from a generator seeded by (``seed``, s),
    so a step's numbers do not depend on the other steps in the dump."""
    if mi_samples < 2:
        raise ValueError(f"--mi-samples must be >= 2 (MI compares a reasoning's prompt with others), got {mi_samples}")
    by_step: dict[int, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_step[sample.step].append(sample)
    lines = []
    for step in sorted(by_step):
        rng = np.random.default_rng(derive_seed("dump-mi", seed, step))
        line = {"step": step, **step_metrics(agent, by_step[step], rng, mi_samples, mi_columns)}
        lines.append(line)
        if progress is not None:
            progress.advance("pairs", line["pairs"])
    return lines


def _cell(metric: dict[str, Any] | None, stderr: bool = False) -> str:
    if not metric or metric.get("value") is None:
        return "n/a"
    text = f"{metric['value']:.3f}"
    return text + (f"±{metric['stderr']:.3f}" if stderr and metric.get("stderr") is not None else "")


def format_steps(lines: Sequence[dict[str, Any]]) -> str:
    """The per-step table (plain text), headed by the metric names."""
    header = ["step", "pairs", "distinct_prompts", "mi_estimate", "retrieval_accuracy", "retrieval_chance",
              "reasoning_entropy_estimate", "token_entropy"]  # fmt: skip
    body = []
    for line in lines:
        m = line["metrics"]
        prompts = (m.get("distinct_prompts") or {}).get("value")
        body.append([str(line["step"]), str(line["pairs"]), "n/a" if prompts is None else str(int(prompts)),
                     _cell(m.get("mi_estimate"), True), _cell(m.get("retrieval_accuracy")),
                     _cell(m.get("retrieval_chance")), _cell(m.get("reasoning_entropy_estimate")),
                     _cell(m.get("token_entropy"), True)])  # fmt: skip
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    rows = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *body]]
    rows.insert(1, "  ".join("-" * w for w in widths))
    reasons = sorted({m["unavailable"] for line in lines for m in line["metrics"].values() if m.get("unavailable")})
    return "\n".join(rows + [f"n/a: {reason}" for reason in reasons])


def plot_steps(lines: Sequence[dict[str, Any]], path: Path, title: str) -> bool:
    """mi_entropy.png: MI (± one standard error) and token entropy per step, and MI against entropy coloured by
    step. False when matplotlib is missing or no step has both numbers."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return False
    rows = []
    for line in lines:
        mi, h = line["metrics"].get("mi_estimate") or {}, line["metrics"].get("token_entropy") or {}
        rows.append((line["step"], mi.get("value"), mi.get("stderr") or 0.0, h.get("value"), h.get("stderr") or 0.0))
    both = [r for r in rows if r[1] is not None and r[3] is not None]
    if not any(r[1] is not None for r in rows):
        return False
    fig, (curves, scatter) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"wspace": 0.45})
    shown = [r for r in rows if r[1] is not None]
    curves.errorbar([r[0] for r in shown], [r[1] for r in shown], yerr=[r[2] for r in shown], marker="o", ms=4,
                    capsize=2, color="C0", label="mi_estimate ± 1 s.e.")  # fmt: skip
    curves.set_xlabel("training step")
    curves.xaxis.set_major_locator(MaxNLocator(integer=True))
    curves.set_ylabel("MI estimate I(X;Z) (nats/token)", color="C0")
    twin = curves.twinx()
    entropy = [r for r in rows if r[3] is not None]
    twin.errorbar([r[0] for r in entropy], [r[3] for r in entropy], yerr=[r[4] for r in entropy], marker="s", ms=4,
                  capsize=2, color="C1", label="token_entropy ± 1 s.e.")  # fmt: skip
    twin.set_ylabel("token entropy (nats)", color="C1")
    handles = curves.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    curves.legend(handles=handles, fontsize=7, loc="best")
    curves.set_title("MI and entropy per step", fontsize=9)
    if both:
        points = scatter.scatter([r[3] for r in both], [r[1] for r in both], c=[r[0] for r in both], cmap="viridis",
                                 s=40, edgecolors="black", linewidths=0.4)  # fmt: skip
        fig.colorbar(points, ax=scatter, label="training step")
    scatter.axhline(0.0, color="grey", lw=0.8, ls="--")
    scatter.set_xlabel("token entropy (nats)")
    scatter.set_ylabel("MI estimate I(X;Z) (nats/token)")
    scatter.set_title("MI vs entropy (entropy held while MI falls = template collapse)", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def write_outputs(out: Path, lines: Sequence[dict[str, Any]], header: dict[str, Any]) -> list[str]:
    """mi_steps.jsonl, mi_steps.csv, mi_entropy.png and mi_report.md; returns the names written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "mi_steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    write_json_atomic(out / "mi_config.json", header)
    names = ["mi_steps.jsonl", "mi_config.json"]
    keys = sorted({k for line in lines for k in line["metrics"]})
    csv = ["step,pairs," + ",".join(f"{k},{k}_stderr" for k in keys)]
    for line in lines:
        cells = []
        for key in keys:
            metric = line["metrics"].get(key) or {}
            cells += ["" if metric.get(f) is None else repr(metric[f]) for f in ("value", "stderr")]
        csv.append(f"{line['step']},{line['pairs']}," + ",".join(cells))
    (out / "mi_steps.csv").write_text("\n".join(csv) + "\n", encoding="utf-8")
    names.append("mi_steps.csv")
    title = f"{header['model']} on {header['format']} dump"
    if plot_steps(lines, out / "mi_entropy.png", title):
        names.append("mi_entropy.png")
    report = [f"# MI family per step: {title}", "", "```", format_steps(lines), "```", ""]
    report += ["![MI and entropy per step](mi_entropy.png)"] if "mi_entropy.png" in names else []
    (out / "mi_report.md").write_text("\n".join(report) + "\n", encoding="utf-8")
    return [*names, "mi_report.md"]
