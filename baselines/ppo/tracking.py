"""Experiment trackers the learner reports to besides its own files: Weights & Biases (``report_to="wandb"``).

TensorBoard stays in ``MetricsWriter`` (``tensorboard=True``). A W&B run is named after the out-dir, holds the
config, and logs each iteration's row at step = iteration; its id is kept in ``out_dir/wandb_run_id`` so a
resumed run continues the same W&B run. ``WANDB_PROJECT`` picks the project (default ``ragen-envs``),
``WANDB_MODE=offline`` writes the run under ``out_dir/wandb`` without any network (``wandb sync`` uploads it).
"""

from __future__ import annotations

import math
import os
import uuid
from pathlib import Path
from typing import Any

TRACKERS = ("tensorboard", "wandb")
DEFAULT_PROJECT = "ragen-envs"


def parse_report_to(value: str) -> tuple[str, ...]:
    """``"wandb"`` / ``"tensorboard,wandb"`` / ``""`` or ``"none"`` -> the tracker names, checked."""
    names = tuple(n.strip() for n in value.split(",") if n.strip() and n.strip() != "none")
    for name in names:
        if name not in TRACKERS:
            import difflib

            close = difflib.get_close_matches(name, TRACKERS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"report_to: unknown tracker {name!r}.{hint} Allowed: {', '.join(TRACKERS)} or none")
    return names


class WandbRun:
    """One W&B run for one out-dir (rank 0 only)."""

    def __init__(self, out_dir: Path, config: dict[str, Any]) -> None:
        try:
            import wandb
        except ImportError as error:
            raise ImportError(
                "report_to='wandb' needs the wandb package: pip install 'ragen-envs[wandb]' (or drop wandb from "
                "report_to)"
            ) from error
        self._wandb = wandb
        self.out_dir, self.config = out_dir, config
        self.run = None
        self._start()

    def _start(self) -> None:
        id_file = self.out_dir / "wandb_run_id"
        run_id = id_file.read_text().strip() if id_file.exists() else uuid.uuid4().hex[:8]
        id_file.write_text(run_id)
        self.run = self._wandb.init(
            project=os.environ.get("WANDB_PROJECT", DEFAULT_PROJECT), name=self.out_dir.name, id=run_id,
            resume="allow", dir=str(self.out_dir), config=self.config, reinit="create_new",
        )  # fmt: skip

    def log(self, row: dict[str, Any]) -> None:
        """Log a metrics row's finite numbers at its iteration (a closed run is continued)."""
        if self.run is None:  # ``train()`` called again after it finished the run: continue it
            self._start()
        values = {k: v for k, v in row.items() if isinstance(v, (int, float)) and k != "iteration" and math.isfinite(v)}
        self.run.log(values, step=int(row["iteration"]))

    def close(self) -> None:
        """Finish the W&B run; a later :meth:`log` continues it."""
        if self.run is not None:
            self.run.finish()
            self.run = None


def open_trackers(names: tuple[str, ...], out_dir: Path, config: dict[str, Any]) -> list[WandbRun]:
    """The trackers beyond TensorBoard that ``names`` asks for."""
    return [WandbRun(out_dir, config)] if "wandb" in names else []
