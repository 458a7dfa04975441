"""The statistics of the miniature experiment, exact and dependency-free (numpy only).

- :func:`sign_flip_p`: one-sided exact paired sign-flip (permutation) test of "mean difference > 0": under the
  null each seed's difference is as likely positive as negative, so all 2^n sign assignments of |d| are equally
  likely; p = the fraction whose mean is ≥ the observed mean (the observed assignment counts, so p ≥ 2^-n).
- :func:`holm`: Holm's step-down adjustment of a family of p-values (controls the family-wise error rate).
- :func:`bootstrap_ci`: percentile interval of the mean of paired differences, seeds resampled with
  replacement (seeded, so the page is reproducible).
- :func:`spearman`: Spearman's rank correlation (average ranks for ties; NaN when a side is constant).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np


def sign_flip_p(differences: Sequence[float]) -> float:
    """Exact one-sided p-value of mean(differences) > 0 under random sign flips."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or len(d) == 0 or not np.all(np.isfinite(d)):
        raise ValueError(f"differences must be a non-empty 1-D finite sequence, got {differences!r}")
    observed = d.mean()
    magnitudes = np.abs(d)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    means = (signs * magnitudes).mean(axis=1)
    return float(np.mean(means >= observed - 1e-12))  # tolerance: the observed assignment is always counted


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (monotone, capped at 1)."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


def bootstrap_ci(
    differences: Sequence[float], level: float = 0.95, draws: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean paired difference."""
    d = np.asarray(differences, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(draws, len(d)))].mean(axis=1)
    tail = (1.0 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):  # ties share their average rank
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho of paired samples (finite pairs only)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if len(a) < 3:
        return float("nan")
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def paired_tests(hypotheses: dict, cells: dict, seeds: Sequence[int], outcome) -> dict[str, dict]:
    """A design's hypotheses on its per-seed outcomes.

    ``hypotheses``: name -> (description, {cell: weight}); the paired difference of a seed is
    Σ weight · ``outcome(cells[cell][seed])``, over the ``seeds`` complete in every cell the hypothesis names.
    Per hypothesis: ``n``, ``mean``, bootstrap ``ci``, one-sided sign-flip ``p`` (NaN below 2 seeds), the
    ``diffs`` and ``holm`` (Holm over the hypotheses that have a p).
    """
    results = {}
    for name, (_, weights) in hypotheses.items():
        usable = [s for s in seeds if all(s in cells.get(c, {}) for c in weights)]
        diffs = [sum(w * outcome(cells[c][s]) for c, w in weights.items()) for s in usable]
        diffs = [float(d) for d in diffs if np.isfinite(d)]
        if len(diffs) >= 2:
            results[name] = dict(n=len(diffs), mean=float(np.mean(diffs)), ci=bootstrap_ci(diffs),
                                 p=sign_flip_p(diffs), diffs=diffs)  # fmt: skip
        else:
            results[name] = dict(n=len(diffs), mean=float("nan"), ci=(float("nan"),) * 2, p=float("nan"), diffs=diffs)
    complete = [n for n in hypotheses if np.isfinite(results[n]["p"])]
    adjusted = dict(zip(complete, holm([results[n]["p"] for n in complete]), strict=True)) if complete else {}
    for name in hypotheses:
        results[name]["holm"] = adjusted.get(name, float("nan"))
    return results


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for the results pages' tables, to ``digits`` decimals; "–" for a missing or non-finite value."""
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def hypothesis_lines(hypotheses: dict, results: dict[str, dict]) -> list[str]:
    """Markdown lines of :func:`paired_tests`' results, one row per hypothesis."""
    lines = [
        "| hypothesis | seeds | mean paired difference | bootstrap 95% CI | per-seed differences | p (one-sided) "
        f"| p (Holm, {len(hypotheses)}) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (text, _) in hypotheses.items():
        r = results[name]
        low, high = r["ci"]
        per_seed = ", ".join(f"{d:+.2f}" for d in r["diffs"]) or "–"
        lines.append(f"| ({name}) {text} | {r['n']} | {fmt(r['mean'])} | [{fmt(low)}, {fmt(high)}] | {per_seed} | "
                     f"{fmt(r['p'], 4)} | {fmt(r['holm'], 4)} |")  # fmt: skip
    return lines
