"""The plots a user is told to read: no text drawn over other text, every env and agent named."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

from harness.report import mi_entropy_figure  # noqa: E402

ENVS = ["Bandit-v0", "CodeExec-v0", "Countdown-v0", "FrozenLake-8x8-v0", "FrozenLake-v0", "MathQA-v0",
        "MathWord-v0", "Sokoban-10x10-v0", "Sokoban-8x8-v0", "Sokoban-v0", "WebShop-v0"]  # fmt: skip


def _texts(fig):
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [
        (t.get_text(), t.get_window_extent(renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip()
    ]


def test_the_random_cluster_at_mi_zero_stays_readable():
    # an input-agnostic agent puts every env at the same spot (MI ~ 0, H(Z) ~ 3.8): the front page's figure points users there
    points = [("random", env, 3.8 + 0.01 * i, 0.0) for i, env in enumerate(ENVS)]
    points += [("oracle", env, 2.0 + 0.1 * i, 2.0 + 0.1 * i) for i, env in enumerate(ENVS)]
    points += [("tiny", env, 3.0, 0.02) for env in ENVS]
    fig = mi_entropy_figure(points, "MI vs reasoning entropy")
    texts = _texts(fig)
    shown = [text for text, _ in texts]
    for name in [*ENVS, "random", "oracle", "tiny"]:
        assert name in shown, name
    overlapping = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(texts, 2) if box_a.overlaps(box_b)]
    assert not overlapping, overlapping[:5]
    # the per-env panel gives each env its own row: the ten random points there are ten distinct places
    by_env = fig.axes[1]
    offsets = [tuple(xy) for collection in by_env.collections for xy in collection.get_offsets()]
    assert len(set(offsets)) == len(offsets) == len(points)


def test_every_random_point_is_its_own_marker_in_the_scatter():
    # eleven envs at MI 0 and entropies 0.01 apart were one blob of markers on top of each other
    from harness.report import SCATTER_SIZE

    points = [("random", env, 3.8 + 0.01 * i, 0.0) for i, env in enumerate(ENVS)]
    points += [("oracle", env, 2.0 + 0.1 * i, 2.0 + 0.1 * i) for i, env in enumerate(ENVS)]
    fig = mi_entropy_figure(points, "MI vs reasoning entropy")
    fig.canvas.draw()
    scatter = fig.axes[0]
    centres = [
        c.get_offset_transform().transform(c.get_offsets())[0] * 72.0 / fig.dpi
        for c in scatter.collections
        if len(c.get_offsets()) == 1 and c.get_sizes()[0] == SCATTER_SIZE
    ]
    assert len(centres) == len(points)
    diameter = SCATTER_SIZE**0.5
    close = [(i, j) for i, j in itertools.combinations(range(len(centres)), 2)
             if ((centres[i] - centres[j]) ** 2).sum() ** 0.5 < diameter]  # fmt: skip
    assert not close, close[:5]
    assert any("spread on a ring" in text for text, _ in _texts(fig))  # the figure says what it did


def _summary(rates):
    rows = [
        {"env_id": f"ragen/{env}", "agent": agent, "metrics": {"success_rate": metric}}
        for (env, agent), metric in rates.items()
    ]
    return {"run_id": "r1", "rows": rows}


def test_success_plot_is_titled_explains_its_whiskers_and_draws_zero_as_zero():
    from harness.report import success_figure

    none = {"value": None, "stderr": None, "n": 0, "unavailable": "why"}
    fig = success_figure(_summary({
        ("Bandit-v0", "random"): {"value": 0.5, "stderr": 0.1, "n": 8},
        ("Bandit-v0", "oracle"): {"value": 1.0, "stderr": 0.0, "n": 8},
        ("Sokoban-v0", "random"): {"value": 0.0, "stderr": 0.0, "n": 8},
        ("Sokoban-v0", "oracle"): none,
    }))  # fmt: skip
    ax = fig.axes[0]
    assert "Success rate" in ax.get_title() and "r1" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["random", "oracle"] and any("standard error" in t for t in legend)
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("0") == 1 and "n/a" in labels and "0.5" in labels  # 0 is a value; n/a is not 0
    overlapping = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(_texts(fig), 2) if box_a.overlaps(box_b)]
    assert not overlapping, overlapping[:5]


def test_a_ring_at_the_edge_of_the_axes_stays_inside_them():
    from harness.report import spread_overlaps

    positions = np.array([[100.0, 5.0]] * 6)  # six markers on one spot at the bottom edge of a 200 x 200 box
    shift, centres = spread_overlaps(positions, 8.0, bounds=(0.0, 0.0, 200.0, 200.0))
    placed = positions + shift
    assert placed[:, 1].min() >= 4.0 and centres == [(100.0, 5.0)]
    gaps = [np.hypot(*(placed[i] - placed[j])) for i, j in itertools.combinations(range(6), 2)]
    assert min(gaps) >= 8.0
