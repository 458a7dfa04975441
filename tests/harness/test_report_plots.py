"""The plots a user is told to read: no text drawn over other text, every env and agent named."""

from __future__ import annotations

import itertools

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
