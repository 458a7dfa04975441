"""The front page's figure, docs/mi_entropy.png, drawn from committed data by the harness's own plot.

    python scripts/front_page_figure.py --from-run runs/<baseline-run>   # extract the points, then draw
    python scripts/front_page_figure.py                                   # redraw from the committed points

``--from-run`` reads a ``harness run baseline`` directory and writes docs/data/baseline_mi_entropy.json: the run's
id, date, git commit and preset, and one (agent, env, H(Z), MI) point per env × agent, exactly as
``harness.report.mi_points`` takes them from summary.json. The figure is ``harness.report.mi_entropy_figure`` of
those points, the plot every ``harness run`` writes as mi_entropy.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "baseline_mi_entropy.json"
FIGURE = ROOT / "docs" / "mi_entropy.png"


def extract(run_dir: Path) -> dict:
    """The run's provenance and its MI-vs-entropy points."""
    from harness.report import mi_points

    config = json.loads((run_dir / "config.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    if config["run"].get("preset") != "baseline":
        raise SystemExit(f"front_page_figure: {run_dir} is not a `harness run baseline` run")
    if config.get("git_dirty"):
        raise SystemExit(f"front_page_figure: {run_dir} was run from a modified checkout; rerun it from a commit")
    return {
        "source": "harness run baseline",
        "run_id": config["run_id"],
        "created": config["created"],
        "git_commit": config["git_commit"],
        "package_version": config["package_version"],
        "points": [
            {"agent": agent, "env": env, "reasoning_entropy_estimate": entropy, "mi_estimate": mi}
            for agent, env, entropy, mi in mi_points(summary)
        ],
    }


def draw(data: dict) -> None:
    """docs/mi_entropy.png from the points."""
    from harness.report import plot_mi_entropy

    points = [(p["agent"], p["env"], p["reasoning_entropy_estimate"], p["mi_estimate"]) for p in data["points"]]
    title = f"harness run baseline ({data['git_commit'][:7]}): MI vs reasoning entropy per agent @ env"
    plot_mi_entropy(points, FIGURE, title)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--from-run", type=Path, help="a `harness run baseline` directory to take the points from")
    args = parser.parse_args(argv)
    if args.from_run is not None:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(extract(args.from_run), indent=1) + "\n")
        print(f"wrote {DATA.relative_to(ROOT)}")
    draw(json.loads(DATA.read_text()))
    print(f"wrote {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
